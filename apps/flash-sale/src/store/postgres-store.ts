import pg from 'pg'
import { orderToWrite, saleValues } from './rows.js'
import { auditWith, type FencedOrder, migrated, numbered, SqlSaleStore, STATEMENTS } from './sql-sale-store.js'
import type { BuyOutcome, OrderToWrite, Sale, SaleAudit, SaleStore } from './types.js'

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
 * The conditional decrement (`remain = remain - 1 WHERE remain >= 1`: the row lock orders the buyers, see
 * docs/background.md, "A flash sale without a lock") and the order insert as ONE statement: a unique violation on the order
 * (a second order of the user, or an order id already written) aborts the decrement with it.
 */
const BUY_ATOMIC = `
WITH taken AS (
  UPDATE fs_stock SET remain = remain - $3 WHERE sale_id = $1 AND bucket = 0 AND remain >= $3 RETURNING bucket)
INSERT INTO fs_orders (id, sale_id, user_id, quantity, bucket, created_at)
SELECT $4, $1, $2, $3, bucket, $5 FROM taken`

/** The fenced stock write ($1 remain, $2 token, $3 sale, $4 bucket, $5 token) and the order, in one statement. */
const COMMIT_FENCED = `
WITH written AS (${numbered(STATEMENTS.fencedWrite)} RETURNING bucket)
INSERT INTO fs_orders (id, sale_id, user_id, quantity, bucket, created_at)
SELECT $6, $3, $7, $8, bucket, $9 FROM written`

/** PostgreSQL returns the claimed row's stock with the claim itself. */
const CLAIM = `${numbered(STATEMENTS.claim)} RETURNING remain`

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
  const migrate = async () => {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    // Several services may start together: serialize the DDL with an advisory lock.
    const client = await pool.connect()
    try {
      await client.query('SELECT pg_advisory_lock(724001)')
      await client.query(SCHEMA)
    } finally {
      await client.query('SELECT pg_advisory_unlock(724001)').finally(() => client.release())
    }
  }
  return new PostgresStore(await migrated(pool, migrate))
}

class PostgresStore extends SqlSaleStore {
  readonly name = 'postgres'

  constructor(private readonly pool: pg.Pool) {
    super()
  }

  protected async rows<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    return (await this.pool.query(numbered(sql), [...params])).rows as T[]
  }

  protected async insertSale(sale: Sale, stock: readonly number[]): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await client.query(numbered(STATEMENTS.insertSale), saleValues(sale))
      for (const [bucket, remain] of stock.entries()) {
        await client.query(numbered(STATEMENTS.insertBucket), [sale.id, bucket, remain])
      }
    })
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
    const { rows } = await this.pool.query(CLAIM, [token, saleId, bucket, token])
    return (rows[0] as { remain: number } | undefined)?.remain
  }

  protected async writeFenced(write: FencedOrder): Promise<BuyOutcome> {
    const { saleId, bucket, remain, token, userId, quantity, order } = write
    const params = [remain, token, saleId, bucket, token, order.id, userId, quantity, order.createdAt]
    try {
      const { rowCount } = await this.pool.query(COMMIT_FENCED, params)
      return rowCount === 1 ? { status: 'ordered', orderId: order.id, bucket } : { status: 'stale' }
    } catch (error) {
      if (isUniqueViolation(error)) return { status: 'duplicate' }
      throw error
    }
  }

  async audit(saleId: string): Promise<SaleAudit | undefined> {
    const snapshot = (client: pg.PoolClient) =>
      auditWith(async (sql, params) => (await client.query(numbered(sql), [...params])).rows, saleId)
    return inTransaction(this.pool, snapshot, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
  }

  async close(): Promise<void> {
    await this.pool.end()
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
