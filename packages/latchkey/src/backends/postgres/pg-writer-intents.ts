import type { PgClient, PgRunner } from './pg-client.js'

interface Intent {
  readonly client: PgClient
  readonly intentKey: string
  timer: NodeJS.Timeout
}

const ignore = (): void => undefined

/**
 * Waiting writers of the advisory strategy: while a writer waits (`AcquireRequest.queue`), it holds a
 * *shared* advisory lock on the lock's "writer intent" key on a client of its own, for `queueTtlMs` after
 * its last try. Readers do not start while any intent is held, so a stream of readers cannot starve a
 * writer. Several writers may wait at once (shared); their order among themselves is not kept. A crashed
 * waiter's intent goes with its connection.
 */
export class WriterIntents {
  private readonly held = new Map<string, Intent>()

  constructor(private readonly db: PgRunner) {}

  /** The intents whose id starts with `prefix`: id and the backend pid of their client (for inspect). */
  sessions(prefix: string): { id: string; session: number | undefined }[] {
    return [...this.held]
      .filter(([id]) => id.startsWith(prefix))
      .map(([id, intent]) => ({ id, session: intent.client.processID ?? undefined }))
  }

  /** Takes or refreshes the intent `id` on advisory key `intentKey`. */
  async keep(id: string, intentKey: string, ttlMs: number): Promise<void> {
    const existing = this.held.get(id)
    if (existing !== undefined) {
      this.arm(id, existing, ttlMs)
      return
    }
    // The runner guards the client against 'error' until it is given back.
    const client = await this.db.connect()
    try {
      await client.query('SELECT pg_try_advisory_lock_shared($1::bigint)', [intentKey])
    } catch (error) {
      this.db.giveBack(client, false)
      throw error
    }
    const intent: Intent = { client, intentKey, timer: setTimeout(ignore, 0) }
    this.held.set(id, intent)
    this.arm(id, intent, ttlMs)
  }

  /**
   * Gives the intent up, unlocking it on the server before it resolves. Destroying the client alone would free the
   * lock only once the server notices the disconnect, and a reader asking in between (right after this writer was
   * granted) would be refused on a free lock. A client whose unlock fails is destroyed, which frees it too.
   */
  async drop(id: string): Promise<void> {
    const intent = this.held.get(id)
    if (intent === undefined) return
    this.held.delete(id)
    clearTimeout(intent.timer)
    try {
      await intent.client.query('SELECT pg_advisory_unlock_shared($1::bigint)', [intent.intentKey])
    } catch {
      this.db.giveBack(intent.client, false)
      return
    }
    this.db.giveBack(intent.client, true)
  }

  async dropAll(): Promise<void> {
    await Promise.all([...this.held.keys()].map((id) => this.drop(id)))
  }

  private arm(id: string, intent: Intent, ttlMs: number): void {
    clearTimeout(intent.timer)
    // A timer never throws: a failed unlock already destroyed the client, which frees the intent.
    intent.timer = setTimeout(() => void this.drop(id), ttlMs)
    intent.timer.unref()
  }
}
