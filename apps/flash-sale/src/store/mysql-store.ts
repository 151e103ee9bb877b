import { fencedUpdate } from 'latchkey/fence'
import mysql from 'mysql2/promise'
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

const SQL = {
  fencedWrite: fencedUpdate({ table: 'fs_stock', set: { remain: 0 }, where: { sale_id: '', bucket: 0 }, token: 0n })
    .sql,
  insertOrder: 'INSERT INTO fs_orders (id, sale_id, user_id, quantity, bucket, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  decrement: 'UPDATE fs_stock SET remain = remain - ? WHERE sale_id = ? AND bucket = 0 AND remain >= ?',
  claim: 'UPDATE fs_stock SET fence_token = ? WHERE sale_id = ? AND bucket = ? AND fence_token <= ?',
  remain: 'SELECT remain FROM fs_stock WHERE sale_id = ? AND bucket = ?',
  sale: 'SELECT * FROM fs_sales WHERE id = ?',
  recent: 'SELECT * FROM fs_sales ORDER BY created_at DESC, id LIMIT ?',
  orderIdOf: 'SELECT id FROM fs_orders WHERE sale_id = ? AND user_id = ?',
  buckets: 'SELECT bucket, remain FROM fs_stock WHERE sale_id = ? ORDER BY bucket',
  counts: 'SELECT COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS sold FROM fs_orders WHERE sale_id = ?',
  totals:
    'SELECT COALESCE(SUM(remain), 0) AS remaining, COALESCE(MIN(remain), 0) AS min_remain FROM fs_stock WHERE sale_id = ?',
  orders: 'SELECT id, user_id, quantity FROM fs_orders WHERE sale_id = ?',
  insertSale: `INSERT INTO fs_sales (${SALE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  insertBucket: 'INSERT INTO fs_stock (sale_id, bucket, remain) VALUES (?, ?, ?)',
} as const

type Db = mysql.Pool | mysql.PoolConnection

async function rows<T>(db: Db, sql: string, params: unknown[]): Promise<T[]> {
  const [result] = await db.query(sql, params)
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
  try {
    for (const ddl of SCHEMA) await pool.query(ddl)
  } catch (error) {
    await pool.end()
    throw error
  }
  return new MysqlStore(pool)
}

class MysqlStore implements SaleStore {
  readonly name = 'mysql'

  constructor(private readonly pool: mysql.Pool) {}

  async createSale(input: SaleInput): Promise<Sale> {
    const sale = newSale(input)
    await inTransaction(this.pool, async (c) => {
      await c.execute(SQL.insertSale, saleValues(sale) as mysql.ExecuteValues)
      for (const [bucket, remain] of splitStock(sale.stock, sale.buckets).entries()) {
        await c.execute(SQL.insertBucket, [sale.id, bucket, remain])
      }
    })
    return sale
  }

  async getSale(id: string): Promise<Sale | undefined> {
    const [row] = await rows<SaleRow>(this.pool, SQL.sale, [id])
    return row === undefined ? undefined : toSale(row)
  }

  async summary(id: string): Promise<SaleSummary | undefined> {
    const [row] = await rows<SaleRow>(this.pool, SQL.sale, [id])
    return row === undefined ? undefined : this.summarize(row)
  }

  async listSales(limit: number): Promise<SaleSummary[]> {
    const list = await rows<SaleRow>(this.pool, SQL.recent, [limit])
    return Promise.all(list.map((row) => this.summarize(row)))
  }

  async orderIdOf(saleId: string, userId: string): Promise<string | undefined> {
    return (await rows<{ id: string }>(this.pool, SQL.orderIdOf, [saleId, userId]))[0]?.id
  }

  async buckets(saleId: string): Promise<BucketStock[]> {
    return rows<BucketStock>(this.pool, SQL.buckets, [saleId])
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
      return (await rows<{ remain: number }>(c, SQL.remain, [saleId, bucket]))[0]?.remain
    })
  }

  commitFenced(
    saleId: string,
    bucket: number,
    remain: number,
    token: bigint,
    userId: string,
    quantity: number,
  ): Promise<BuyOutcome> {
    const { id, createdAt } = orderToWrite(undefined)
    return buyTransaction(this.pool, async (c) => {
      if ((await affected(c, SQL.fencedWrite, [remain, String(token), saleId, bucket, String(token)])) === 0) {
        return { status: 'stale' }
      }
      await c.execute(SQL.insertOrder, [id, saleId, userId, quantity, bucket, createdAt])
      return { status: 'ordered', orderId: id, bucket }
    })
  }

  audit(saleId: string): Promise<SaleAudit | undefined> {
    return auditOf(this.pool, saleId)
  }

  async close(): Promise<void> {
    await this.pool.end()
  }

  private async summarize(row: SaleRow): Promise<SaleSummary> {
    const [[t], [c]] = await Promise.all([
      rows<{ remaining: string }>(this.pool, SQL.totals, [row.id]),
      rows<{ orders: number; sold: string }>(this.pool, SQL.counts, [row.id]),
    ])
    return {
      ...toSale(row),
      remaining: Number(t?.remaining ?? 0),
      sold: Number(c?.sold ?? 0),
      orders: Number(c?.orders ?? 0),
    }
  }
}

/** The audit from one consistent snapshot (REPEATABLE READ, read only). */
async function auditOf(pool: mysql.Pool, saleId: string): Promise<SaleAudit | undefined> {
  const c = await pool.getConnection()
  try {
    await c.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY')
    const [sale] = await rows<{ stock: number }>(c, SQL.sale, [saleId])
    if (sale === undefined) return undefined
    const [t] = await rows<{ remaining: string; min_remain: number }>(c, SQL.totals, [saleId])
    const totals = { remaining: Number(t?.remaining ?? 0), minRemain: Number(t?.min_remain ?? 0) }
    return auditFromOrders(sale.stock, totals, await rows<OrderRow>(c, SQL.orders, [saleId]))
  } finally {
    await c.query('COMMIT').catch(() => undefined)
    c.release()
  }
}
