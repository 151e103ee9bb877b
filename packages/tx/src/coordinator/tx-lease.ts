import type { Lease } from 'latchkey'

/**
 * The lease under which a coordinator drives one transaction: its fencing token (carried by every log write),
 * its local deadline (checked before each branch call, which no token can refuse) and a signal aborted when it
 * is lost. Either a row lease on the transaction's own log row (the default) or a latchkey lease (`locks` given).
 */
export interface TxLease {
  readonly token: bigint
  /** Local clock, epoch ms: past it another coordinator may have taken the transaction over. */
  readonly expiresAt: number
  readonly signal: AbortSignal
  /** The `leaseMs` a log write carries: a row lease is extended by every write, and released by the final one. */
  carry(final: boolean): number | undefined
  /** A write sent at `sentAt` (local clock) that carried `carry(final)` was applied. */
  carried(sentAt: number, final: boolean): void
  /** Gives the lease up (nothing to do when the final write released it). Never rejects. */
  release(): Promise<void>
}

/** A latchkey lease as a {@link TxLease}: renewed by its own watchdog; log writes carry nothing of it. */
export function lockLease(lease: Lease): TxLease {
  return {
    get token() {
      return lease.token
    },
    get expiresAt() {
      return lease.expiresAt
    },
    signal: lease.signal,
    carry: () => undefined,
    carried: () => undefined,
    release: () => lease.release().catch(() => undefined),
  }
}
