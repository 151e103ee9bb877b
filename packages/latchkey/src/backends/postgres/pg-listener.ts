import { LocalNotifier } from '../../backend/local-notifier.js'
import type { LockKind, ReleaseSubscription } from '../../backend/types.js'
import type { PgClient, PgRunner } from './pg-client.js'

/** How long to wait before listening again after the listening client died. */
const RELISTEN_DELAY_MS = 250

/**
 * One `LISTEN`ing client per backend, taken from the pool on the first subscription and kept until
 * `close()`. Notifications carry a hash of the lock key; the subscriptions of that hash wake as {@link LocalNotifier} says.
 *
 * While the client is (re)connecting, a release may be missed, so every subscription is woken once the
 * `LISTEN` is in place: its waiter tries again instead of sleeping through the release. If listening fails
 * (pool exhausted, server down) the waiters still wake on the core's fallback poll and the holder's expiry.
 */
export class PgListener {
  private readonly notifier = new LocalNotifier()
  private client: PgClient | undefined
  private starting: Promise<void> | undefined
  private retry: NodeJS.Timeout | undefined
  private closed = false

  constructor(
    private readonly db: PgRunner,
    private readonly channel: string,
  ) {}

  subscribe(payload: string, kind: LockKind): ReleaseSubscription {
    const sub = this.notifier.subscribe(payload, kind)
    this.start()
    return sub
  }

  /** Whether the `LISTEN` is in place (for tests). */
  get listening(): boolean {
    return this.client !== undefined
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.retry)
    await this.starting
    const client = this.client
    this.client = undefined
    // Destroyed, not returned: a pooled connection must not keep listening for someone else.
    if (client !== undefined) this.db.giveBack(client, false)
    this.notifier.notifyAll()
  }

  private start(): void {
    if (this.closed || this.client !== undefined || this.starting !== undefined) return
    this.starting = this.listen()
      .catch(() => this.scheduleRetry())
      .finally(() => {
        this.starting = undefined
      })
  }

  private async listen(): Promise<void> {
    const client = await this.db.connect()
    if (this.closed) {
      this.db.giveBack(client, true)
      return
    }
    const onNotification = (message: { channel?: string; payload?: string }): void => {
      if (message.channel === this.channel && typeof message.payload === 'string') this.notifier.notify(message.payload)
    }
    const onError = (): void => {
      if (this.client !== client) return
      this.client = undefined
      client.removeListener('notification', onNotification as (...args: unknown[]) => void)
      this.db.giveBack(client, false)
      this.notifier.notifyAll()
      this.scheduleRetry()
    }
    client.on('error', onError)
    client.on('notification', onNotification as (...args: unknown[]) => void)
    try {
      // The channel is a fixed identifier of this module, never user input.
      await client.query(`LISTEN ${this.channel}`)
    } catch (error) {
      this.db.giveBack(client, false)
      throw error
    }
    this.client = client
    this.notifier.notifyAll()
  }

  private scheduleRetry(): void {
    if (this.closed || this.notifier.size === 0) return
    clearTimeout(this.retry)
    this.retry = setTimeout(() => this.start(), RELISTEN_DELAY_MS)
    this.retry.unref()
  }
}
