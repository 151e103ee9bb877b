import { type Backend, createLocks, type Locks } from 'latchkey'
import { TxError } from '../errors.js'
import type { NewTx, TxStore } from '../store/types.js'
import { hasRowLeases } from './new-record.js'
import { RowLease, type RowStore } from './row-lease.js'
import { lockLease, type TxLease } from './tx-lease.js'

const lockName = (gid: string) => `tx:${gid}`

/** The details of the error for a transaction whose lease another coordinator holds (retryable: it may finish). */
export const busy = (gid: string) => ({ code: 'TX_BUSY', gid, retryable: true })

/**
 * Where a coordinator takes the lease of each transaction it drives: the store's row leases when it has them,
 * else latchkey leases, from `locks` when given or from locks over the store's own lockBackend() (closed with
 * the coordinator).
 */
export class TxLeases {
  /** The store's row leases, when they are the leases; else undefined. */
  readonly rows: RowStore | undefined
  /** latchkey leases when `locks` was given or the store has no row leases; else undefined. */
  private readonly locks: Locks | undefined
  private readonly ownedBackend: Backend | undefined

  constructor(
    private readonly store: TxStore,
    locks: Locks | undefined,
    private readonly ttlMs: number,
  ) {
    if (locks !== undefined) this.locks = locks
    else if (hasRowLeases(store)) this.rows = store
    else {
      const backend = store.lockBackend?.()
      if (backend === undefined) throw new TypeError('latchkey-tx: this store has no lockBackend(); pass options.locks')
      this.ownedBackend = backend
      this.locks = createLocks({ backend, namespace: 'latchkey-tx', requireFencing: true })
    }
  }

  /**
   * The lease of a new transaction, with its create written now (`write`) or left to the drive's first write. A
   * row lease is taken by the create itself (token 1); a latchkey lease is acquired first.
   */
  async forNew(tx: NewTx, write: boolean): Promise<TxLease> {
    if (this.rows !== undefined) {
      const sentAt = Date.now()
      if (write) await this.store.create({ ...tx, leaseMs: this.ttlMs }, 1n)
      return new RowLease(this.rows, tx.gid, 1n, this.ttlMs, sentAt)
    }
    const lease = await this.take(tx.gid)
    if (lease === undefined) {
      throw new TxError(`Transaction ${tx.gid} is being driven by another coordinator`, busy(tx.gid))
    }
    if (!write) return lease
    try {
      await this.store.create(tx, lease.token)
    } catch (error) {
      await lease.release()
      throw error
    }
    return lease
  }

  /** The lease of a stored transaction, if nobody holds it: a claim of its row lease, or a latchkey lease. */
  async take(gid: string): Promise<TxLease | undefined> {
    if (this.rows !== undefined) {
      const sentAt = Date.now()
      const token = await this.rows.claim(gid, this.ttlMs)
      return token === undefined ? undefined : new RowLease(this.rows, gid, token, this.ttlMs, sentAt)
    }
    const lease = await this.locks?.mutex(lockName(gid)).tryAcquire({ ttlMs: this.ttlMs })
    return lease === undefined ? undefined : lockLease(lease)
  }

  /** Closes the locks and backend opened here (not `locks` given by the application). */
  async close(): Promise<void> {
    if (this.ownedBackend !== undefined) {
      await this.locks?.close()
      await this.ownedBackend.close()
    }
  }
}
