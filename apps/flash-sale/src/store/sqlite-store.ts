import Database from 'better-sqlite3'
import { fencedUpdate } from 'latchkey/fence'
import {
  auditFromOrders,
  newSale,
  type OrderRow,
  orderToWrite,
  SALE_COLUMNS,
  type SaleRow,
  saleValues,
  splitStock,
  toSale,
} from './rows.js'
import type {
  BucketStock,
  BuyOutcome,
  OrderToWrite,
  Sale,
  SaleAudit,
  SaleInput,
  SaleStore,
  SaleSummary,
} from './types.js'

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

/** Every statement the store runs, prepared once. */
const SQL = {
  insertSale: `INSERT INTO fs_sales (${SALE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  insertBucket: 'INSERT INTO fs_stock (sale_id, bucket, remain) VALUES (?, ?, ?)',
  sale: 'SELECT * FROM fs_sales WHERE id = ?',
  recent: 'SELECT * FROM fs_sales ORDER BY created_at DESC, rowid DESC LIMIT ?',
  buckets: 'SELECT bucket, remain FROM fs_stock WHERE sale_id = ? ORDER BY bucket',
  orderIdOf: 'SELECT id FROM fs_orders WHERE sale_id = ? AND user_id = ?',
  counts: 'SELECT COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS sold FROM fs_orders WHERE sale_id = ?',
  decrement: 'UPDATE fs_stock SET remain = remain - ? WHERE sale_id = ? AND bucket = 0 AND remain >= ?',
  insertOrder: 'INSERT INTO fs_orders (id, sale_id, user_id, quantity, bucket, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  claim: 'UPDATE fs_stock SET fence_token = ? WHERE sale_id = ? AND bucket = ? AND fence_token <= ? RETURNING remain',
  fencedWrite: fencedUpdate({ table: 'fs_stock', set: { remain: 0 }, where: { sale_id: '', bucket: 0 }, token: 0n })
    .sql,
  stockTotals:
    'SELECT COALESCE(SUM(remain), 0) AS remaining, COALESCE(MIN(remain), 0) AS minRemain FROM fs_stock WHERE sale_id = ?',
  orders: 'SELECT id, user_id, quantity FROM fs_orders WHERE sale_id = ?',
} as const

type Statements = { readonly [K in keyof typeof SQL]: Database.Statement }

function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

/** Marks a transaction to roll back because the order already exists. */
class Duplicate extends Error {}

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
class SqliteStore implements SaleStore {
  readonly name = 'sqlite'
  private readonly st: Statements

  constructor(private readonly db: Database.Database) {
    this.st = Object.fromEntries(Object.entries(SQL).map(([key, sql]) => [key, db.prepare(sql)])) as Statements
  }

  async createSale(input: SaleInput): Promise<Sale> {
    const sale = newSale(input)
    this.db
      .transaction(() => {
        this.st.insertSale.run(...saleValues(sale))
        for (const [bucket, remain] of splitStock(sale.stock, sale.buckets).entries()) {
          this.st.insertBucket.run(sale.id, bucket, remain)
        }
      })
      .immediate()
    return sale
  }

  async getSale(id: string): Promise<Sale | undefined> {
    const row = this.st.sale.get(id) as SaleRow | undefined
    return row === undefined ? undefined : toSale(row)
  }

  async summary(id: string): Promise<SaleSummary | undefined> {
    const row = this.st.sale.get(id) as SaleRow | undefined
    return row === undefined ? undefined : this.summarize(row)
  }

  async listSales(limit: number): Promise<SaleSummary[]> {
    return (this.st.recent.all(limit) as SaleRow[]).map((row) => this.summarize(row))
  }

  async orderIdOf(saleId: string, userId: string): Promise<string | undefined> {
    return (this.st.orderIdOf.get(saleId, userId) as { id: string } | undefined)?.id
  }

  async buckets(saleId: string): Promise<BucketStock[]> {
    return this.st.buckets.all(saleId) as BucketStock[]
  }

  async buyAtomic(saleId: string, userId: string, quantity: number, order?: OrderToWrite): Promise<BuyOutcome> {
    const { id, createdAt } = orderToWrite(order)
    const buy = (): BuyOutcome => {
      if (this.st.orderIdOf.get(saleId, userId) !== undefined) return { status: 'duplicate' }
      if (this.st.decrement.run(quantity, saleId, quantity).changes === 0) return { status: 'sold-out' }
      this.st.insertOrder.run(id, saleId, userId, quantity, 0, createdAt)
      return { status: 'ordered', orderId: id, bucket: 0 }
    }
    try {
      return this.db.transaction(buy).immediate()
    } catch (error) {
      if (isUniqueViolation(error)) return { status: 'duplicate' }
      throw error
    }
  }

  async claimBucket(saleId: string, bucket: number, token: bigint): Promise<number | undefined> {
    return (this.st.claim.get(token, saleId, bucket, token) as { remain: number } | undefined)?.remain
  }

  async commitFenced(
    saleId: string,
    bucket: number,
    remain: number,
    token: bigint,
    userId: string,
    quantity: number,
  ): Promise<BuyOutcome> {
    const { id, createdAt } = orderToWrite(undefined)
    const commit = (): BuyOutcome => {
      // Parameter order follows fencedUpdate: set values, token, where values, token.
      if (this.st.fencedWrite.run(remain, token, saleId, bucket, token).changes === 0) return { status: 'stale' }
      try {
        this.st.insertOrder.run(id, saleId, userId, quantity, bucket, createdAt)
      } catch (error) {
        // Throwing rolls the stock write back with the order.
        throw isUniqueViolation(error) ? new Duplicate() : error
      }
      return { status: 'ordered', orderId: id, bucket }
    }
    try {
      return this.db.transaction(commit).immediate()
    } catch (error) {
      if (error instanceof Duplicate) return { status: 'duplicate' }
      throw error
    }
  }

  async audit(saleId: string): Promise<SaleAudit | undefined> {
    const read = (): SaleAudit | undefined => {
      const row = this.st.sale.get(saleId) as SaleRow | undefined
      if (row === undefined) return undefined
      const totals = this.st.stockTotals.get(saleId) as { remaining: number; minRemain: number }
      return auditFromOrders(row.stock, totals, this.st.orders.all(saleId) as OrderRow[])
    }
    return this.db.transaction(read).deferred()
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close()
  }

  private summarize(row: SaleRow): SaleSummary {
    const totals = this.st.stockTotals.get(row.id) as { remaining: number }
    const counts = this.st.counts.get(row.id) as { orders: number; sold: number }
    return { ...toSale(row), remaining: totals.remaining, sold: counts.sold, orders: counts.orders }
  }
}
