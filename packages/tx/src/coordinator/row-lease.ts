import type { TxStore } from '../store/types.js'
import type { TxLease } from './tx-lease.js'

/** A store with row leases. */
export type RowStore = TxStore & Required<Pick<TxStore, 'claim' | 'renew' | 'release'>>

/**
 * A lease on the transaction's own log row (`lease_until`, the database's clock), taken by the create or by a
 * claim that raised the row's fencing token. Every log write extends it, so a transaction that writes at least
 * every `ttlMs / 3` is never renewed separately; a quieter one (a long branch call, a backoff sleep) is renewed
 * by a timer. The local deadline counts from the moment the extending write was *sent*, which is no later than
 * the database's clock read when it ran: locally the lease always ends first. Lost (overtaken, or the deadline
 * passed with no renewal getting through): `signal` aborts.
 */
export class RowLease implements TxLease {
  private readonly lost = new AbortController()
  readonly signal: AbortSignal = this.lost.signal
  expiresAt: number
  private lastSent: number
  private held = true
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly store: RowStore,
    private readonly gid: string,
    readonly token: bigint,
    private readonly ttlMs: number,
    sentAt: number,
  ) {
    this.expiresAt = sentAt + ttlMs
    this.lastSent = sentAt
    this.schedule(ttlMs / 3)
  }

  carry(final: boolean): number {
    return final ? 0 : this.ttlMs
  }

  carried(sentAt: number, final: boolean): void {
    if (final) {
      this.held = false
      clearTimeout(this.timer)
      return
    }
    this.held = true
    this.lastSent = Math.max(this.lastSent, sentAt)
    this.expiresAt = Math.max(this.expiresAt, sentAt + this.ttlMs)
  }

  async release(): Promise<void> {
    clearTimeout(this.timer)
    if (!this.held) return
    this.held = false
    await this.store.release(this.gid, this.token).catch(() => undefined)
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => void this.tick(), Math.max(0, ms))
    this.timer.unref()
  }

  private async tick(): Promise<void> {
    if (!this.held || this.signal.aborted) return
    const now = Date.now()
    if (now >= this.expiresAt) {
      this.lost.abort(new Error(`lease of ${this.gid} expired before it could be renewed`))
      return
    }
    const due = this.lastSent + this.ttlMs / 3
    if (now < due) return this.schedule(due - now)
    let renewed: boolean | undefined
    try {
      renewed = await this.store.renew(this.gid, this.token, this.ttlMs)
    } catch {
      renewed = undefined // the database is unreachable: try again until the local deadline
    }
    if (!this.held) return
    if (renewed === false) {
      this.lost.abort(new Error(`lease of ${this.gid} was taken over by another coordinator`))
      return
    }
    if (renewed) this.carried(now, false)
    this.schedule(renewed ? this.ttlMs / 3 : Math.min(this.ttlMs / 10, this.expiresAt - Date.now()))
  }
}
