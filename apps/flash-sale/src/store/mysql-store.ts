import mysql from 'mysql2/promise'
import { orderToWrite, saleValues } from './rows.js'
import { auditWith, type FencedOrder, migrated, STATEMENTS as SQL, SqlSaleStore } from './sql-sale-store.js'
import type { BuyOutcome, OrderToWrite, Sale, SaleAudit, SaleStore } from './types.js'

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS fs_sales (
    id VARCHAR(64) PRIMARY KEY, item VARCHAR(200) NOT NULL, stock INT NOT NULL, starts_at BIGINT NOT NULL,
    strategy VARCHAR(16) NOT NULL, buckets INT NOT NULL, created_at BIGINT NOT NULL, KEY (created_at)) ENGINE=InnoDB`,
  `CREATE TABLE IF NOT EXISTS fs_stock (
    sale_id VARCHAR(64) NOT NULL, bucket INT NOT NULL, remain INT NOT NULL,
    fence_token BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (sale_id, bucket)) ENGINE=InnoDB`,
  `CREATE TABLE IF NOT EXISTS fs_orders (
    id VARCHAR(64) PRIMARY KEY, sale_id VARCHAR(64) NOT NULL, user_id VARCHAR(128) NOT NULL, quantity INT NOT NULL,
    bucket INT NOT NULL, created_at BIGINT NOT NULL, UNIQUE KEY fs_orders_user (sale_id, user_id)) ENGINE=InnoDB`,
]

/** MariaDB has no `UPDATE ... RETURNING`: the fenced read re-reads the row its claim just locked. */
const SELECT_REMAIN = 'SELECT remain FROM fs_stock WHERE sale_id = ? AND bucket = ?'

type Db = mysql.Pool | mysql.PoolConnection

async function rows<T>(db: Db, sql: string, params: readonly unknown[]): Promise<T[]> {
  const [result] = await db.query(sql, params as unknown[])
  return result as T[]
}

async function affected(db: Db, sql: string, params: unknown[]): Promise<number> {
  const [result] = await db.execute(sql, params as mysql.ExecuteValues)
  return (result as mysql.ResultSetHeader).affectedRows
}

/** Runs `fn` in a transaction on one connection; commits when `commits(result)`, else rolls back. */
async function inTransaction<T>(
  pool: mysql.Pool,
  fn: (c: mysql.PoolConnection) => Promise<T>,
  commits: (result: T) => boolean = () => true,
): Promise<T> {
  const c = await pool.getConnection()
  try {
    await c.beginTransaction()
    const result = await fn(c)
    if (commits(result)) await c.commit()
    else await c.rollback()
    return result
  } catch (error) {
    await c.rollback().catch(() => undefined)
    throw error
  } finally {
    c.release()
  }
}

/** A buy transaction: commits only an order; a duplicate order (ER_DUP_ENTRY) becomes `duplicate`. */
async function buyTransaction(
  pool: mysql.Pool,
  fn: (c: mysql.PoolConnection) => Promise<BuyOutcome>,
): Promise<BuyOutcome> {
  try {
    return await inTransaction(pool, fn, (outcome) => outcome.status === 'ordered')
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ER_DUP_ENTRY') return { status: 'duplicate' }
    throw error
  }
}

/**
 * A MySQL / MariaDB (InnoDB) store. MariaDB has no `UPDATE ... RETURNING`, so the fenced read is an
 * UPDATE then a SELECT of the row it just locked, in one transaction.
 *
 * @example
 * const store = await mysqlStore('mysql://root@127.0.0.1:3306/shop')
 */
export async function mysqlStore(url: string, options: { max?: number } = {}): Promise<SaleStore> {
  const pool = mysql.createPool({ uri: url, connectionLimit: options.max ?? 8, supportBigNumbers: true })
  const migrate = async () => {
    for (const ddl of SCHEMA) await pool.query(ddl)
  }
  return new MysqlStore(await migrated(pool, migrate))
}

class MysqlStore extends SqlSaleStore {
  readonly name = 'mysql'

  constructor(private readonly pool: mysql.Pool) {
    super()
  }

  protected rows<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    return rows<T>(this.pool, sql, params)
  }

  protected async insertSale(sale: Sale, stock: readonly number[]): Promise<void> {
    await inTransaction(this.pool, async (c) => {
      await c.execute(SQL.insertSale, saleValues(sale) as mysql.ExecuteValues)
      for (const [bucket, remain] of stock.entries()) await c.execute(SQL.insertBucket, [sale.id, bucket, remain])
    })
  }

  buyAtomic(saleId: string, userId: string, quantity: number, order?: OrderToWrite): Promise<BuyOutcome> {
    const { id, createdAt } = orderToWrite(order)
    return buyTransaction(this.pool, async (c) => {
      if ((await affected(c, SQL.decrement, [quantity, saleId, quantity])) === 0) return { status: 'sold-out' }
      await c.execute(SQL.insertOrder, [id, saleId, userId, quantity, 0, createdAt])
      return { status: 'ordered', orderId: id, bucket: 0 }
    })
  }

  claimBucket(saleId: string, bucket: number, token: bigint): Promise<number | undefined> {
    return inTransaction(this.pool, async (c) => {
      const claimed = await affected(c, SQL.claim, [String(token), saleId, bucket, String(token)])
      if (claimed !== 1) return undefined
      return (await rows<{ remain: number }>(c, SELECT_REMAIN, [saleId, bucket]))[0]?.remain
    })
  }

  protected writeFenced({ saleId, bucket, remain, token, userId, quantity, order }: FencedOrder): Promise<BuyOutcome> {
    return buyTransaction(this.pool, async (c) => {
      if ((await affected(c, SQL.fencedWrite, [remain, String(token), saleId, bucket, String(token)])) === 0) {
        return { status: 'stale' }
      }
      await c.execute(SQL.insertOrder, [order.id, saleId, userId, quantity, bucket, order.createdAt])
      return { status: 'ordered', orderId: order.id, bucket }
    })
  }

  /** Reads from one consistent snapshot (REPEATABLE READ, read only). */
  async audit(saleId: string): Promise<SaleAudit | undefined> {
    const c = await this.pool.getConnection()
    try {
      await c.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY')
      return await auditWith((sql, params) => rows(c, sql, params), saleId)
    } finally {
      await c.query('COMMIT').catch(() => undefined)
      c.release()
    }
  }

  async close(): Promise<void> {
    await this.pool.end()
  }
}
