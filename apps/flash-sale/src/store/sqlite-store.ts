import Database from 'better-sqlite3'
import { auditFromOrders, type OrderRow, orderToWrite, type SaleRow, saleValues } from './rows.js'
import { type FencedOrder, SqlSaleStore, STATEMENTS } from './sql-sale-store.js'
import type { BuyOutcome, OrderToWrite, RunBuyer, RunOutcome, RunResult, Sale, SaleAudit, SaleStore } from './types.js'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS fs_sales (
  id TEXT PRIMARY KEY, item TEXT NOT NULL, stock INTEGER NOT NULL, starts_at INTEGER NOT NULL,
  strategy TEXT NOT NULL, buckets INTEGER NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS fs_stock (
  sale_id TEXT NOT NULL, bucket INTEGER NOT NULL, remain INTEGER NOT NULL,
  fence_token INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (sale_id, bucket)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS fs_orders (
  id TEXT PRIMARY KEY, sale_id TEXT NOT NULL, user_id TEXT NOT NULL, quantity INTEGER NOT NULL,
  bucket INTEGER NOT NULL, created_at INTEGER NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS fs_orders_user ON fs_orders (sale_id, user_id);
`

function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

/** Marks a transaction to roll back because the order already exists. */
class Duplicate extends Error {}

/** Marks a run's transaction to roll back because the fence refused its stock write. */
class Stale extends Error {}

/**
 * The embedded store: one SQLite file in WAL mode shared by every service process on this host.
 * `synchronous = NORMAL`: a committed order survives a process crash (kill -9), not a power cut.
 *
 * @example
 * const store = sqliteStore('./flash-sale.db')
 * const sale = await store.createSale({ item: 'phone', stock: 100, startsAt: 0, strategy: 'lock', buckets: 1 })
 */
export function sqliteStore(path: string, options: { busyTimeoutMs?: number } = {}): SaleStore {
  const db = new Database(path)
  db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 10_000)}`)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.transaction(() => db.exec(SCHEMA)).immediate()
  return new SqliteStore(db)
}

/** better-sqlite3 is synchronous: each method runs at once, in a transaction where it writes. */
class SqliteStore extends SqlSaleStore {
  readonly name = 'sqlite'
  /** Equal creation times list in insertion order, newest first. */
  protected override readonly recent = 'SELECT * FROM fs_sales ORDER BY created_at DESC, rowid DESC LIMIT ?'
  private readonly prepared = new Map<string, Database.Statement>()
  private readonly claim: Database.Statement
  /** Built once: better-sqlite3's `transaction()` makes a new wrapper (five functions) on every call. */
  private readonly sellTransaction: Database.Transaction<
    (saleId: string, bucket: number, token: bigint, known: number | undefined, buyers: readonly RunBuyer[]) => RunResult
  >

  constructor(private readonly db: Database.Database) {
    super()
    this.claim = db.prepare(`${STATEMENTS.claim} RETURNING remain`)
    this.sellTransaction = db.transaction(
      (saleId: string, bucket: number, token: bigint, known: number | undefined, buyers: readonly RunBuyer[]) =>
        this.sellInTransaction(saleId, bucket, token, known, buyers),
    )
  }

  protected async rows<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    return this.statement(sql).all(...params) as T[]
  }

  protected async insertSale(sale: Sale, stock: readonly number[]): Promise<void> {
    this.db
      .transaction(() => {
        this.statement(STATEMENTS.insertSale).run(...saleValues(sale))
        for (const [bucket, remain] of stock.entries()) {
          this.statement(STATEMENTS.insertBucket).run(sale.id, bucket, remain)
        }
      })
      .immediate()
  }

  async buyAtomic(saleId: string, userId: string, quantity: number, order?: OrderToWrite): Promise<BuyOutcome> {
    const { id, createdAt } = orderToWrite(order)
    const buy = (): BuyOutcome => {
      if (this.statement(STATEMENTS.orderIdOf).get(saleId, userId) !== undefined) return { status: 'duplicate' }
      if (this.statement(STATEMENTS.decrement).run(quantity, saleId, quantity).changes === 0) {
        return { status: 'sold-out' }
      }
      this.statement(STATEMENTS.insertOrder).run(id, saleId, userId, quantity, 0, createdAt)
      return { status: 'ordered', orderId: id, bucket: 0 }
    }
    try {
      return this.db.transaction(buy).immediate()
    } catch (error) {
      if (isUniqueViolation(error)) return { status: 'duplicate' }
      throw error
    }
  }

  /**
   * The whole run in one IMMEDIATE transaction, so one commit (one WAL append) pays for every order of it instead
   * of one each, and the claim of a new lease shares it too. All or nothing: a fence that refuses the stock write
   * rolls the run back (`stale` for its first buyer), and so does an error (each buyer gets it).
   */
  override async sellRun(
    saleId: string,
    bucket: number,
    token: bigint,
    known: number | undefined,
    buyers: readonly RunBuyer[],
  ): Promise<RunResult> {
    try {
      return this.sellTransaction.immediate(saleId, bucket, token, known, buyers)
    } catch (error) {
      if (error instanceof Stale) return { outcomes: [{ status: 'stale' }], remain: undefined }
      return { outcomes: buyers.map(() => ({ status: 'error', error })), remain: undefined }
    }
  }

  /** The body of {@link sellRun}: claim (unless `known`), the orders, then one fenced stock write. */
  private sellInTransaction(
    saleId: string,
    bucket: number,
    token: bigint,
    known: number | undefined,
    buyers: readonly RunBuyer[],
  ): RunResult {
    const claimed = known ?? this.claimNow(saleId, bucket, token)
    if (claimed === undefined) throw new Stale()
    let remain = claimed
    const outcomes: RunOutcome[] = []
    for (const { userId, quantity } of buyers) {
      if (remain < quantity) {
        outcomes.push({ status: 'sold-out' })
        continue
      }
      const order = orderToWrite(undefined)
      try {
        this.statement(STATEMENTS.insertOrder).run(order.id, saleId, userId, quantity, bucket, order.createdAt)
      } catch (error) {
        // A failed statement is undone alone (SQLite's ABORT), the transaction goes on with the next buyer.
        if (!isUniqueViolation(error)) throw error
        outcomes.push({ status: 'duplicate' })
        continue
      }
      remain -= quantity
      outcomes.push({ status: 'ordered', orderId: order.id, bucket })
    }
    // One stock write for the run, fenced: with a `known` stock, a higher token may have claimed the bucket since.
    const written =
      remain === claimed ||
      this.statement(STATEMENTS.fencedWrite).run(remain, token, saleId, bucket, token).changes === 1
    if (!written) throw new Stale()
    return { outcomes, remain }
  }

  async claimBucket(saleId: string, bucket: number, token: bigint): Promise<number | undefined> {
    return this.claimNow(saleId, bucket, token)
  }

  /** The claim itself, synchronous (a run's transaction makes it inside): the stock, or undefined when stale. */
  private claimNow(saleId: string, bucket: number, token: bigint): number | undefined {
    return (this.claim.get(token, saleId, bucket, token) as { remain: number } | undefined)?.remain
  }

  protected async writeFenced({
    saleId,
    bucket,
    remain,
    token,
    userId,
    quantity,
    order,
  }: FencedOrder): Promise<BuyOutcome> {
    const commit = (): BuyOutcome => {
      if (this.statement(STATEMENTS.fencedWrite).run(remain, token, saleId, bucket, token).changes === 0) {
        return { status: 'stale' }
      }
      try {
        this.statement(STATEMENTS.insertOrder).run(order.id, saleId, userId, quantity, bucket, order.createdAt)
      } catch (error) {
        // Throwing rolls the stock write back with the order.
        throw isUniqueViolation(error) ? new Duplicate() : error
      }
      return { status: 'ordered', orderId: order.id, bucket }
    }
    try {
      return this.db.transaction(commit).immediate()
    } catch (error) {
      if (error instanceof Duplicate) return { status: 'duplicate' }
      throw error
    }
  }

  /** Synchronous reads in one deferred transaction: no other write lands between them. */
  async audit(saleId: string): Promise<SaleAudit | undefined> {
    const read = (): SaleAudit | undefined => {
      const row = this.statement(STATEMENTS.sale).get(saleId) as SaleRow | undefined
      if (row === undefined) return undefined
      const t = this.statement(STATEMENTS.totals).get(saleId) as { remaining: number; min_remain: number }
      const orders = this.statement(STATEMENTS.orders).all(saleId) as OrderRow[]
      return auditFromOrders(row.stock, { remaining: t.remaining, minRemain: t.min_remain }, orders)
    }
    return this.db.transaction(read).deferred()
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close()
  }

  /** `sql` prepared once per store. */
  private statement(sql: string): Database.Statement {
    let statement = this.prepared.get(sql)
    if (statement === undefined) {
      statement = this.db.prepare(sql)
      this.prepared.set(sql, statement)
    }
    return statement
  }
}
