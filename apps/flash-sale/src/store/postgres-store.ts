import { randomUUID } from 'node:crypto'
import { fencedUpdate } from 'latchkey/fence'
import pg from 'pg'
import { splitStock } from './sqlite-store.js'
import type { BucketStock, BuyOutcome, Sale, SaleAudit, SaleStore, SaleSummary, Strategy } from './types.js'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS fs_sales (
  id TEXT PRIMARY KEY, item TEXT NOT NULL, stock INTEGER NOT NULL, starts_at BIGINT NOT NULL,
  strategy TEXT NOT NULL, buckets INTEGER NOT NULL, created_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS fs_stock (
  sale_id TEXT NOT NULL, bucket INTEGER NOT NULL, remain INTEGER NOT NULL,
  fence_token BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (sale_id, bucket));
CREATE TABLE IF NOT EXISTS fs_orders (
  id TEXT PRIMARY KEY, sale_id TEXT NOT NULL, user_id TEXT NOT NULL, quantity INTEGER NOT NULL,
  bucket INTEGER NOT NULL, created_at BIGINT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS fs_orders_user ON fs_orders (sale_id, user_id);
`

/**
 * Note 004's conditional decrement and the order insert as ONE statement: a unique violation on the order
 * (a second order of the user) aborts the decrement with it.
 */
const BUY_ATOMIC = `
WITH taken AS (
  UPDATE fs_stock SET remain = remain - $3 WHERE sale_id = $1 AND bucket = 0 AND remain >= $3 RETURNING bucket)
INSERT INTO fs_orders (id, sale_id, user_id, quantity, bucket, created_at)
SELECT $4, $1, $2, $3, bucket, $5 FROM taken`

/** The fenced stock write ($1 remain, $2 token, $3 sale, $4 bucket, $5 token) and the order, in one statement. */
const COMMIT_FENCED = `
WITH written AS (${fencedUpdate({ table: 'fs_stock', set: { remain: 0 }, where: { sale_id: '', bucket: 0 }, token: 0n, placeholders: '$' }).sql} RETURNING bucket)
INSERT INTO fs_orders (id, sale_id, user_id, quantity, bucket, created_at)
SELECT $6, $3, $7, $8, bucket, $9 FROM written`

const CLAIM =
  'UPDATE fs_stock SET fence_token = $1 WHERE sale_id = $2 AND bucket = $3 AND fence_token <= $1 RETURNING remain'

interface SaleRow {
  id: string
  item: string
  stock: number
  starts_at: string
  strategy: string
  buckets: number
  created_at: string
}

function toSale(row: SaleRow): Sale {
  return Object.freeze({
    id: row.id,
    item: row.item,
    stock: row.stock,
    startsAt: Number(row.starts_at),
    strategy: row.strategy as Strategy,
    buckets: row.buckets,
    createdAt: Number(row.created_at),
  })
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505'
}

/**
 * A PostgreSQL store: every buy is one autocommitted statement (CTE), so no transaction spans a round trip.
 * `schema` (default `public`) lets tests use a throwaway schema.
 *
 * @example
 * const store = await postgresStore('postgres://postgres@127.0.0.1:5432/shop')
 */
export async function postgresStore(url: string, options: { schema?: string; max?: number } = {}): Promise<SaleStore> {
  const schema = options.schema ?? 'public'
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new RangeError(`schema must be a plain identifier, received ${schema}`)
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 8, options: `-c search_path=${schema}` })
  try {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    // Several services may start together: serialize the DDL with an advisory lock.
    const client = await pool.connect()
    try {
      await client.query('SELECT pg_advisory_lock(724001)')
      await client.query(SCHEMA)
    } finally {
      await client.query('SELECT pg_advisory_unlock(724001)').finally(() => client.release())
    }
  } catch (error) {
    await pool.end()
    throw error
  }
  return makeStore(pool)
}

function makeStore(pool: pg.Pool): SaleStore {
  const one = async <T>(sql: string, params: unknown[]): Promise<T | undefined> =>
    (await pool.query(sql, params)).rows[0] as T | undefined
  const counts = async (id: string) =>
    (await one<{ orders: string; sold: string }>(
      'SELECT COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS sold FROM fs_orders WHERE sale_id = $1',
      [id],
    )) as { orders: string; sold: string }
  const totals = async (id: string) =>
    (await one<{ remaining: string; min_remain: number | null }>(
      'SELECT COALESCE(SUM(remain), 0) AS remaining, MIN(remain) AS min_remain FROM fs_stock WHERE sale_id = $1',
      [id],
    )) as { remaining: string; min_remain: number | null }
  const summarize = async (row: SaleRow): Promise<SaleSummary> => {
    const [t, c] = await Promise.all([totals(row.id), counts(row.id)])
    return { ...toSale(row), remaining: Number(t.remaining), sold: Number(c.sold), orders: Number(c.orders) }
  }
  return {
    name: 'postgres',
    async createSale(input) {
      const sale: Sale = Object.freeze({ ...input, id: randomUUID().slice(0, 8), createdAt: Date.now() })
      await inTransaction(pool, async (client) => {
        await client.query(
          'INSERT INTO fs_sales (id, item, stock, starts_at, strategy, buckets, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [sale.id, sale.item, sale.stock, sale.startsAt, sale.strategy, sale.buckets, sale.createdAt],
        )
        for (const [bucket, remain] of splitStock(sale.stock, sale.buckets).entries()) {
          await client.query('INSERT INTO fs_stock (sale_id, bucket, remain) VALUES ($1, $2, $3)', [
            sale.id,
            bucket,
            remain,
          ])
        }
      })
      return sale
    },
    async getSale(id) {
      const row = await one<SaleRow>('SELECT * FROM fs_sales WHERE id = $1', [id])
      return row === undefined ? undefined : toSale(row)
    },
    async summary(id): Promise<SaleSummary | undefined> {
      const row = await one<SaleRow>('SELECT * FROM fs_sales WHERE id = $1', [id])
      return row === undefined ? undefined : summarize(row)
    },
    async listSales(limit) {
      const { rows } = await pool.query('SELECT * FROM fs_sales ORDER BY created_at DESC, id LIMIT $1', [limit])
      return Promise.all((rows as SaleRow[]).map(summarize))
    },
    async hasOrder(saleId, userId) {
      return (await one('SELECT 1 FROM fs_orders WHERE sale_id = $1 AND user_id = $2', [saleId, userId])) !== undefined
    },
    async buckets(saleId) {
      const { rows } = await pool.query('SELECT bucket, remain FROM fs_stock WHERE sale_id = $1 ORDER BY bucket', [
        saleId,
      ])
      return rows as BucketStock[]
    },
    async buyAtomic(saleId, userId, quantity): Promise<BuyOutcome> {
      const orderId = randomUUID()
      try {
        const { rowCount } = await pool.query(BUY_ATOMIC, [saleId, userId, quantity, orderId, Date.now()])
        return rowCount === 1 ? { status: 'ordered', orderId, bucket: 0 } : { status: 'sold-out' }
      } catch (error) {
        if (isUniqueViolation(error)) return { status: 'duplicate' }
        throw error
      }
    },
    async claimBucket(saleId, bucket, token) {
      return (await one<{ remain: number }>(CLAIM, [token, saleId, bucket]))?.remain
    },
    async commitFenced(saleId, bucket, remain, token, userId, quantity): Promise<BuyOutcome> {
      const orderId = randomUUID()
      const params = [remain, token, saleId, bucket, token, orderId, userId, quantity, Date.now()]
      try {
        const { rowCount } = await pool.query(COMMIT_FENCED, params)
        return rowCount === 1 ? { status: 'ordered', orderId, bucket } : { status: 'stale' }
      } catch (error) {
        if (isUniqueViolation(error)) return { status: 'duplicate' }
        throw error
      }
    },
    async audit(saleId) {
      return inTransaction(pool, (client) => auditIn(client, saleId), 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    },
    async close() {
      await pool.end()
    },
  }
}

/** Everything {@link SaleAudit} holds, from one snapshot. */
async function auditIn(client: pg.PoolClient, saleId: string): Promise<SaleAudit | undefined> {
  const sale = (await client.query('SELECT stock FROM fs_sales WHERE id = $1', [saleId])).rows[0] as
    | { stock: number }
    | undefined
  if (sale === undefined) return undefined
  const t = (
    await client.query(
      'SELECT COALESCE(SUM(remain), 0) AS remaining, COALESCE(MIN(remain), 0) AS min_remain FROM fs_stock WHERE sale_id = $1',
      [saleId],
    )
  ).rows[0] as { remaining: string; min_remain: number }
  const orders = (await client.query('SELECT id, user_id, quantity FROM fs_orders WHERE sale_id = $1', [saleId]))
    .rows as Array<{ id: string; user_id: string; quantity: number }>
  const perUser = new Map<string, number>()
  for (const o of orders) perUser.set(o.user_id, (perUser.get(o.user_id) ?? 0) + 1)
  return {
    initial: sale.stock,
    remaining: Number(t.remaining),
    minRemain: t.min_remain,
    sold: orders.reduce((n, o) => n + o.quantity, 0),
    orders: orders.length,
    usersWithSeveralOrders: [...perUser.values()].filter((n) => n > 1).length,
    orderIds: new Set(orders.map((o) => o.id)),
  }
}

async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  const client = await pool.connect()
  try {
    await client.query(begin)
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
}
