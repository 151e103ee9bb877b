import { randomUUID } from 'node:crypto'
import Database from 'better-sqlite3'
import { fencedUpdate } from 'latchkey/fence'
import type { BucketStock, BuyOutcome, Sale, SaleAudit, SaleInput, SaleStore, SaleSummary, Strategy } from './types.js'

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

interface SaleRow {
  id: string
  item: string
  stock: number
  starts_at: number
  strategy: string
  buckets: number
  created_at: number
}

const FENCED_WRITE = fencedUpdate({
  table: 'fs_stock',
  set: { remain: 0 },
  where: { sale_id: '', bucket: 0 },
  token: 0n,
}).sql

/** Splits `stock` over `buckets` as evenly as possible (the first buckets take the remainder). */
export function splitStock(stock: number, buckets: number): number[] {
  return Array.from({ length: buckets }, (_, i) => Math.floor(stock / buckets) + (i < stock % buckets ? 1 : 0))
}

function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

function toSale(row: SaleRow): Sale {
  return Object.freeze({
    id: row.id,
    item: row.item,
    stock: row.stock,
    startsAt: row.starts_at,
    strategy: row.strategy as Strategy,
    buckets: row.buckets,
    createdAt: row.created_at,
  })
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
  const st = {
    insertSale: db.prepare(
      'INSERT INTO fs_sales (id, item, stock, starts_at, strategy, buckets, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    insertBucket: db.prepare('INSERT INTO fs_stock (sale_id, bucket, remain) VALUES (?, ?, ?)'),
    sale: db.prepare('SELECT * FROM fs_sales WHERE id = ?'),
    recent: db.prepare('SELECT * FROM fs_sales ORDER BY created_at DESC, rowid DESC LIMIT ?'),
    buckets: db.prepare('SELECT bucket, remain FROM fs_stock WHERE sale_id = ? ORDER BY bucket'),
    hasOrder: db.prepare('SELECT 1 FROM fs_orders WHERE sale_id = ? AND user_id = ?'),
    counts: db.prepare(
      'SELECT COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS sold FROM fs_orders WHERE sale_id = ?',
    ),
    decrement: db.prepare('UPDATE fs_stock SET remain = remain - ? WHERE sale_id = ? AND bucket = 0 AND remain >= ?'),
    insertOrder: db.prepare(
      'INSERT INTO fs_orders (id, sale_id, user_id, quantity, bucket, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    claim: db.prepare(
      'UPDATE fs_stock SET fence_token = ? WHERE sale_id = ? AND bucket = ? AND fence_token <= ? RETURNING remain',
    ),
    fencedWrite: db.prepare(FENCED_WRITE),
    stockTotals: db.prepare(
      'SELECT COALESCE(SUM(remain), 0) AS remaining, COALESCE(MIN(remain), 0) AS minRemain FROM fs_stock WHERE sale_id = ?',
    ),
    several: db.prepare(
      'SELECT COUNT(*) AS n FROM (SELECT user_id FROM fs_orders WHERE sale_id = ? GROUP BY user_id HAVING COUNT(*) > 1)',
    ),
    orderIds: db.prepare('SELECT id FROM fs_orders WHERE sale_id = ?').pluck(),
  }

  const summarize = (row: SaleRow): SaleSummary => {
    const totals = st.stockTotals.get(row.id) as { remaining: number }
    const counts = st.counts.get(row.id) as { orders: number; sold: number }
    return { ...toSale(row), remaining: totals.remaining, sold: counts.sold, orders: counts.orders }
  }
  const createTx = db.transaction((sale: Sale) => {
    st.insertSale.run(sale.id, sale.item, sale.stock, sale.startsAt, sale.strategy, sale.buckets, sale.createdAt)
    for (const [bucket, remain] of splitStock(sale.stock, sale.buckets).entries()) {
      st.insertBucket.run(sale.id, bucket, remain)
    }
  })
  const buyTx = db.transaction((saleId: string, userId: string, quantity: number): BuyOutcome => {
    if (st.hasOrder.get(saleId, userId) !== undefined) return { status: 'duplicate' }
    if (st.decrement.run(quantity, saleId, quantity).changes === 0) return { status: 'sold-out' }
    const orderId = randomUUID()
    st.insertOrder.run(orderId, saleId, userId, quantity, 0, Date.now())
    return { status: 'ordered', orderId, bucket: 0 }
  })
  const commitTx = db.transaction(
    (saleId: string, bucket: number, remain: number, token: bigint, userId: string, quantity: number): BuyOutcome => {
      // Parameter order follows fencedUpdate: set values, token, where values, token.
      if (st.fencedWrite.run(remain, token, saleId, bucket, token).changes === 0) return { status: 'stale' }
      const orderId = randomUUID()
      try {
        st.insertOrder.run(orderId, saleId, userId, quantity, bucket, Date.now())
      } catch (error) {
        // Throwing rolls the stock write back with the order.
        if (isUniqueViolation(error)) throw new Duplicate()
        throw error
      }
      return { status: 'ordered', orderId, bucket }
    },
  )
  const auditTx = db.transaction((saleId: string): SaleAudit | undefined => {
    const row = st.sale.get(saleId) as SaleRow | undefined
    if (row === undefined) return undefined
    const totals = st.stockTotals.get(saleId) as { remaining: number; minRemain: number }
    const counts = st.counts.get(saleId) as { orders: number; sold: number }
    const several = st.several.get(saleId) as { n: number }
    return {
      initial: row.stock,
      remaining: totals.remaining,
      minRemain: totals.minRemain,
      sold: counts.sold,
      orders: counts.orders,
      usersWithSeveralOrders: several.n,
      orderIds: new Set(st.orderIds.all(saleId) as string[]),
    }
  })

  return {
    name: 'sqlite',
    async createSale(input: SaleInput) {
      const sale: Sale = Object.freeze({ ...input, id: randomUUID().slice(0, 8), createdAt: Date.now() })
      createTx.immediate(sale)
      return sale
    },
    async getSale(id) {
      const row = st.sale.get(id) as SaleRow | undefined
      return row === undefined ? undefined : toSale(row)
    },
    async summary(id): Promise<SaleSummary | undefined> {
      const row = st.sale.get(id) as SaleRow | undefined
      return row === undefined ? undefined : summarize(row)
    },
    async listSales(limit) {
      return (st.recent.all(limit) as SaleRow[]).map(summarize)
    },
    async hasOrder(saleId, userId) {
      return st.hasOrder.get(saleId, userId) !== undefined
    },
    async buckets(saleId) {
      return st.buckets.all(saleId) as BucketStock[]
    },
    async buyAtomic(saleId, userId, quantity) {
      try {
        return buyTx.immediate(saleId, userId, quantity)
      } catch (error) {
        if (isUniqueViolation(error)) return { status: 'duplicate' }
        throw error
      }
    },
    async claimBucket(saleId, bucket, token) {
      const row = st.claim.get(token, saleId, bucket, token) as { remain: number } | undefined
      return row?.remain
    },
    async commitFenced(saleId, bucket, remain, token, userId, quantity) {
      try {
        return commitTx.immediate(saleId, bucket, remain, token, userId, quantity)
      } catch (error) {
        if (error instanceof Duplicate) return { status: 'duplicate' }
        throw error
      }
    },
    async audit(saleId) {
      return auditTx.deferred(saleId)
    },
    async close() {
      if (db.open) db.close()
    },
  }
}
