/**
 * The order side of a paid sale, in the sale store's own database (the SQLite file the service processes
 * share): `fs_pay_orders` holds each order's payment state (`pending` → `paid` | `released`), written by the
 * saga's local steps in the coordinator process. A release gives the stock back in the same transaction; the
 * `paid` mark and the order-created event (the outbox row) commit together.
 */
import Database from 'better-sqlite3'
import type { Locks } from 'latchkey'
import type { Outbox } from 'latchkey-tx/outbox'

/** The saga's input: one sold order and what it costs. */
export interface OrderInput {
  readonly orderId: string
  readonly saleId: string
  readonly userId: string
  readonly quantity: number
  readonly bucket: number
  readonly strategy: string
  /** Cents. */
  readonly amount: number
}

/** An order of a sale with its payment state, for the audit. */
export interface LedgerOrder {
  readonly id: string
  readonly userId: string
  readonly quantity: number
  /** `pending`, `paid`, `released`, or null while no saga step has recorded it yet. */
  readonly status: string | null
  readonly amount: number | null
}

/** What the payment invariants need from the order side, read in one snapshot. */
export interface LedgerAudit {
  readonly initial: number
  readonly remaining: number
  readonly minRemain: number
  readonly orders: readonly LedgerOrder[]
  /** Outbox rows not yet confirmed by the broker (whole store). */
  readonly outboxUnsent: number
}

/** The topic of the event the saga's last step writes to the outbox. */
export const ORDER_CREATED = 'order.created'

const SCHEMA = `CREATE TABLE IF NOT EXISTS fs_pay_orders (
  order_id TEXT PRIMARY KEY, sale_id TEXT NOT NULL, user_id TEXT NOT NULL, quantity INTEGER NOT NULL,
  amount INTEGER NOT NULL, status TEXT NOT NULL, updated_at INTEGER NOT NULL)`

const OPEN = `INSERT OR IGNORE INTO fs_pay_orders (order_id, sale_id, user_id, quantity, amount, status, updated_at)
  VALUES (?, ?, ?, ?, ?, 'pending', ?)`

/** Thrown when the fenced stock write of a release was refused (a later lock holder touched the bucket). */
class StaleRelease extends Error {
  readonly retryable = true
}

/** The order side of paid sales on a SQLite sale store. */
export class OrderLedger {
  private readonly db: Database.Database

  /** Opens `path` (the sale store's file) and creates `fs_pay_orders` if missing. */
  constructor(path: string) {
    this.db = new Database(path)
    this.db.pragma('busy_timeout = 10000')
    this.db.pragma('journal_mode = WAL')
    // WAL + NORMAL: a commit survives a killed process (kill -9), not a power cut; FULL's fsync per commit
    // made each charge wait on the disk, and the service runs its charges one at a time.
    this.db.pragma('synchronous = NORMAL')
    this.db.exec(SCHEMA)
  }

  /** The saga input of order `orderId` at `unitPrice` cents a unit; undefined when no such order is stored. */
  input(orderId: string, unitPrice: number): OrderInput | undefined {
    const row = this.db
      .prepare(
        `SELECT o.id, o.sale_id, o.user_id, o.quantity, o.bucket, s.strategy FROM fs_orders o
          JOIN fs_sales s ON s.id = o.sale_id WHERE o.id = ?`,
      )
      .get(orderId) as
      | { id: string; sale_id: string; user_id: string; quantity: number; bucket: number; strategy: string }
      | undefined
    if (row === undefined) return undefined
    return {
      orderId: row.id,
      saleId: row.sale_id,
      userId: row.user_id,
      quantity: row.quantity,
      bucket: row.bucket,
      strategy: row.strategy,
      amount: row.quantity * unitPrice,
    }
  }

  /** Orders stored more than `olderThanMs` ago that no saga has recorded yet (their seller died, or its call did). */
  unrecorded(olderThanMs: number, limit = 100): string[] {
    const rows = this.db
      .prepare(
        `SELECT o.id FROM fs_orders o LEFT JOIN fs_pay_orders p ON p.order_id = o.id
          WHERE p.order_id IS NULL AND o.created_at < ? LIMIT ?`,
      )
      .all(Date.now() - olderThanMs, limit) as Array<{ id: string }>
    return rows.map((r) => r.id)
  }

  /** Saga step `order`: records the order as `pending` payment (idempotent). */
  open(input: OrderInput): void {
    this.db.prepare(OPEN).run(input.orderId, input.saleId, input.userId, input.quantity, input.amount, Date.now())
  }

  /**
   * Compensation of step `order`: marks the order `released` and gives its units back to its bucket, in one
   * transaction, once (a second call finds it released). A `lock` or `sharded` sale's bucket is written only
   * under its latchkey lock and with the lease's fencing token, as the sellers write it: a plain increment could
   * land between a seller's fenced read and its write and be overwritten. `db-atomic` buyers decrement
   * conditionally in one statement, so a plain increment is safe there.
   */
  async release(input: OrderInput, locks: Locks): Promise<'released' | 'already'> {
    if (input.strategy === 'db-atomic') return this.releaseTx(input, undefined)
    const lock = locks.mutex(`sale:${input.saleId}:${input.bucket}`)
    return lock.withLock(async (lease) => this.releaseTx(input, lease.token), { waitMs: 5_000, ttlMs: 5_000 })
  }

  private releaseTx(input: OrderInput, token: bigint | undefined): 'released' | 'already' {
    return this.db
      .transaction((): 'released' | 'already' => {
        // The step's action may never have committed (a crash): record the order first, then release it.
        this.db.prepare(OPEN).run(input.orderId, input.saleId, input.userId, input.quantity, input.amount, Date.now())
        const marked = this.db
          .prepare(
            `UPDATE fs_pay_orders SET status = 'released', updated_at = ? WHERE order_id = ? AND status = 'pending'`,
          )
          .run(Date.now(), input.orderId).changes
        if (marked === 0) return 'already'
        const given =
          token === undefined
            ? this.db
                .prepare('UPDATE fs_stock SET remain = remain + ? WHERE sale_id = ? AND bucket = ?')
                .run(input.quantity, input.saleId, input.bucket).changes
            : this.db
                .prepare(
                  'UPDATE fs_stock SET remain = remain + ?, fence_token = ? WHERE sale_id = ? AND bucket = ? AND fence_token <= ?',
                )
                .run(input.quantity, token, input.saleId, input.bucket, token).changes
        // Throwing rolls the `released` mark back with it; the coordinator retries the compensation.
        if (given === 0) throw new StaleRelease(`release of ${input.orderId}: the bucket's fence moved past ${token}`)
        return 'released'
      })
      .immediate()
  }

  /**
   * Saga step `confirm`: marks the order `paid` and writes the order-created event to the outbox, in one
   * transaction. A repeated call finds it paid and writes nothing.
   */
  confirm(input: OrderInput, outbox: Outbox): 'paid' | 'already' {
    return this.db
      .transaction((): 'paid' | 'already' => {
        const marked = this.db
          .prepare(`UPDATE fs_pay_orders SET status = 'paid', updated_at = ? WHERE order_id = ? AND status = 'pending'`)
          .run(Date.now(), input.orderId).changes
        if (marked === 1) {
          // better-sqlite3 is synchronous: add writes the row before it returns, inside this transaction.
          void outbox.add(this.db, { topic: ORDER_CREATED, key: input.orderId, payload: input })
          return 'paid'
        }
        const row = this.db.prepare('SELECT status FROM fs_pay_orders WHERE order_id = ?').get(input.orderId) as
          | { status: string }
          | undefined
        if (row?.status === 'paid') return 'already'
        throw new Error(`order ${input.orderId} cannot be confirmed: its payment state is ${row?.status ?? 'missing'}`)
      })
      .immediate()
  }

  /** The order side of the invariants for `saleId`, in one read transaction; undefined for an unknown sale. */
  audit(saleId: string, outboxTable = 'latchkey_tx_outbox'): LedgerAudit | undefined {
    return this.db
      .transaction((): LedgerAudit | undefined => {
        const sale = this.db.prepare('SELECT stock FROM fs_sales WHERE id = ?').get(saleId) as
          | { stock: number }
          | undefined
        if (sale === undefined) return undefined
        const totals = this.db
          .prepare(
            'SELECT COALESCE(SUM(remain), 0) AS remaining, COALESCE(MIN(remain), 0) AS min FROM fs_stock WHERE sale_id = ?',
          )
          .get(saleId) as { remaining: number; min: number }
        const orders = this.db
          .prepare(
            `SELECT o.id, o.user_id, o.quantity, p.status, p.amount FROM fs_orders o
              LEFT JOIN fs_pay_orders p ON p.order_id = o.id WHERE o.sale_id = ?`,
          )
          .all(saleId) as Array<{
          id: string
          user_id: string
          quantity: number
          status: string | null
          amount: number | null
        }>
        const hasOutbox = this.db
          .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
          .get(outboxTable)
        const unsent =
          hasOutbox === undefined
            ? 0
            : (
                this.db.prepare(`SELECT COUNT(*) AS n FROM ${outboxTable} WHERE status <> 'sent'`).get() as {
                  n: number
                }
              ).n
        return {
          initial: sale.stock,
          remaining: totals.remaining,
          minRemain: totals.min,
          orders: orders.map((o) => ({
            id: o.id,
            userId: o.user_id,
            quantity: o.quantity,
            status: o.status,
            amount: o.amount,
          })),
          outboxUnsent: unsent,
        }
      })
      .deferred()
  }

  close(): void {
    if (this.db.open) this.db.close()
  }
}
