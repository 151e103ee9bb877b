import { fencedUpdate } from 'latchkey/fence'
import pg from 'pg'
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
 * (a second order of the user, or an order id already written) aborts the decrement with it.
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

const SQL = {
  claim:
    'UPDATE fs_stock SET fence_token = $1 WHERE sale_id = $2 AND bucket = $3 AND fence_token <= $1 RETURNING remain',
  sale: 'SELECT * FROM fs_sales WHERE id = $1',
  recent: 'SELECT * FROM fs_sales ORDER BY created_at DESC, id LIMIT $1',
  orderIdOf: 'SELECT id FROM fs_orders WHERE sale_id = $1 AND user_id = $2',
  buckets: 'SELECT bucket, remain FROM fs_stock WHERE sale_id = $1 ORDER BY bucket',
  counts: 'SELECT COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS sold FROM fs_orders WHERE sale_id = $1',
  totals:
    'SELECT COALESCE(SUM(remain), 0) AS remaining, COALESCE(MIN(remain), 0) AS min_remain FROM fs_stock WHERE sale_id = $1',
  orders: 'SELECT id, user_id, quantity FROM fs_orders WHERE sale_id = $1',
  insertSale: `INSERT INTO fs_sales (${SALE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
  insertBucket: 'INSERT INTO fs_stock (sale_id, bucket, remain) VALUES ($1, $2, $3)',
} as const

type Queryable = pg.Pool | pg.PoolClient

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505'
}

async function one<T>(db: Queryable, sql: string, params: unknown[]): Promise<T | undefined> {
  return (await db.query(sql, params)).rows[0] as T | undefined
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
  return new PostgresStore(pool)
}

class PostgresStore implements SaleStore {
  readonly name = 'postgres'

  constructor(private readonly pool: pg.Pool) {}

  async createSale(input: SaleInput): Promise<Sale> {
    const sale = newSale(input)
    await inTransaction(this.pool, async (client) => {
      await client.query(SQL.insertSale, saleValues(sale))
      for (const [bucket, remain] of splitStock(sale.stock, sale.buckets).entries()) {
        await client.query(SQL.insertBucket, [sale.id, bucket, remain])
      }
    })
    return sale
  }

  async getSale(id: string): Promise<Sale | undefined> {
    const row = await one<SaleRow>(this.pool, SQL.sale, [id])
    return row === undefined ? undefined : toSale(row)
  }

  async summary(id: string): Promise<SaleSummary | undefined> {
    const row = await one<SaleRow>(this.pool, SQL.sale, [id])
    return row === undefined ? undefined : this.summarize(row)
  }

  async listSales(limit: number): Promise<SaleSummary[]> {
    const { rows } = await this.pool.query(SQL.recent, [limit])
    return Promise.all((rows as SaleRow[]).map((row) => this.summarize(row)))
  }

  async orderIdOf(saleId: string, userId: string): Promise<string | undefined> {
    return (await one<{ id: string }>(this.pool, SQL.orderIdOf, [saleId, userId]))?.id
  }

  async buckets(saleId: string): Promise<BucketStock[]> {
    return (await this.pool.query(SQL.buckets, [saleId])).rows as BucketStock[]
  }

  async buyAtomic(saleId: string, userId: string, quantity: number, order?: OrderToWrite): Promise<BuyOutcome> {
    const { id, createdAt } = orderToWrite(order)
    try {
      const { rowCount } = await this.pool.query(BUY_ATOMIC, [saleId, userId, quantity, id, createdAt])
      return rowCount === 1 ? { status: 'ordered', orderId: id, bucket: 0 } : { status: 'sold-out' }
    } catch (error) {
      if (isUniqueViolation(error)) return { status: 'duplicate' }
      throw error
    }
  }

  async claimBucket(saleId: string, bucket: number, token: bigint): Promise<number | undefined> {
    return (await one<{ remain: number }>(this.pool, SQL.claim, [token, saleId, bucket]))?.remain
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
    const params = [remain, token, saleId, bucket, token, id, userId, quantity, createdAt]
    try {
      const { rowCount } = await this.pool.query(COMMIT_FENCED, params)
      return rowCount === 1 ? { status: 'ordered', orderId: id, bucket } : { status: 'stale' }
    } catch (error) {
      if (isUniqueViolation(error)) return { status: 'duplicate' }
      throw error
    }
  }

  async audit(saleId: string): Promise<SaleAudit | undefined> {
    return inTransaction(
      this.pool,
      (client) => auditIn(client, saleId),
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    )
  }

  async close(): Promise<void> {
    await this.pool.end()
  }

  private async summarize(row: SaleRow): Promise<SaleSummary> {
    const [t, c] = await Promise.all([
      one<{ remaining: string }>(this.pool, SQL.totals, [row.id]),
      one<{ orders: string; sold: string }>(this.pool, SQL.counts, [row.id]),
    ])
    return { ...toSale(row), remaining: Number(t?.remaining), sold: Number(c?.sold), orders: Number(c?.orders) }
  }
}

/** Everything {@link SaleAudit} holds, from one snapshot. */
async function auditIn(client: pg.PoolClient, saleId: string): Promise<SaleAudit | undefined> {
  const sale = await one<{ stock: number }>(client, SQL.sale, [saleId])
  if (sale === undefined) return undefined
  const t = (await one<{ remaining: string; min_remain: number }>(client, SQL.totals, [saleId])) ?? {
    remaining: '0',
    min_remain: 0,
  }
  const orders = (await client.query(SQL.orders, [saleId])).rows as OrderRow[]
  return auditFromOrders(sale.stock, { remaining: Number(t.remaining), minRemain: Number(t.min_remain) }, orders)
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
