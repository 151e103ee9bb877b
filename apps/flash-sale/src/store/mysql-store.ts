import { randomUUID } from 'node:crypto'
import { fencedUpdate } from 'latchkey/fence'
import mysql from 'mysql2/promise'
import { splitStock } from './sqlite-store.js'
import type { BucketStock, BuyOutcome, Sale, SaleAudit, SaleStore, SaleSummary, Strategy } from './types.js'

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

const FENCED_WRITE = fencedUpdate({
  table: 'fs_stock',
  set: { remain: 0 },
  where: { sale_id: '', bucket: 0 },
  token: 0n,
}).sql
const INSERT_ORDER =
  'INSERT INTO fs_orders (id, sale_id, user_id, quantity, bucket, created_at) VALUES (?, ?, ?, ?, ?, ?)'

interface SaleRow {
  id: string
  item: string
  stock: number
  starts_at: string | number
  strategy: string
  buckets: number
  created_at: string | number
}

type Db = mysql.Pool | mysql.PoolConnection

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

async function rows<T>(db: Db, sql: string, params: unknown[]): Promise<T[]> {
  const [result] = await db.query(sql, params)
  return result as T[]
}

async function affected(db: Db, sql: string, params: unknown[]): Promise<number> {
  const [result] = await db.execute(sql, params as mysql.ExecuteValues)
  return (result as mysql.ResultSetHeader).affectedRows
}

/** Rolls back unless `fn` resolves; a duplicate order (ER_DUP_ENTRY) becomes `duplicate`. */
async function inTransaction(
  pool: mysql.Pool,
  fn: (c: mysql.PoolConnection) => Promise<BuyOutcome>,
): Promise<BuyOutcome> {
  const c = await pool.getConnection()
  try {
    await c.beginTransaction()
    const outcome = await fn(c)
    if (outcome.status === 'ordered') await c.commit()
    else await c.rollback()
    return outcome
  } catch (error) {
    await c.rollback().catch(() => undefined)
    if ((error as { code?: unknown }).code === 'ER_DUP_ENTRY') return { status: 'duplicate' }
    throw error
  } finally {
    c.release()
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
  return makeStore(pool)
}

function makeStore(pool: mysql.Pool): SaleStore {
  const summarize = async (row: SaleRow): Promise<SaleSummary> => {
    const [t] = await rows<{ remaining: string }>(
      pool,
      'SELECT COALESCE(SUM(remain), 0) AS remaining FROM fs_stock WHERE sale_id = ?',
      [row.id],
    )
    const [c] = await rows<{ orders: number; sold: string }>(
      pool,
      'SELECT COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS sold FROM fs_orders WHERE sale_id = ?',
      [row.id],
    )
    return {
      ...toSale(row),
      remaining: Number(t?.remaining ?? 0),
      sold: Number(c?.sold ?? 0),
      orders: Number(c?.orders ?? 0),
    }
  }
  const saleRow = async (id: string) => (await rows<SaleRow>(pool, 'SELECT * FROM fs_sales WHERE id = ?', [id]))[0]
  return {
    name: 'mysql',
    async createSale(input) {
      const sale: Sale = Object.freeze({ ...input, id: randomUUID().slice(0, 8), createdAt: Date.now() })
      const c = await pool.getConnection()
      try {
        await c.beginTransaction()
        await c.execute(
          'INSERT INTO fs_sales (id, item, stock, starts_at, strategy, buckets, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          [sale.id, sale.item, sale.stock, sale.startsAt, sale.strategy, sale.buckets, sale.createdAt],
        )
        for (const [bucket, remain] of splitStock(sale.stock, sale.buckets).entries()) {
          await c.execute('INSERT INTO fs_stock (sale_id, bucket, remain) VALUES (?, ?, ?)', [sale.id, bucket, remain])
        }
        await c.commit()
      } catch (error) {
        await c.rollback().catch(() => undefined)
        throw error
      } finally {
        c.release()
      }
      return sale
    },
    async getSale(id) {
      const row = await saleRow(id)
      return row === undefined ? undefined : toSale(row)
    },
    async summary(id) {
      const row = await saleRow(id)
      return row === undefined ? undefined : summarize(row)
    },
    async listSales(limit) {
      const list = await rows<SaleRow>(pool, 'SELECT * FROM fs_sales ORDER BY created_at DESC, id LIMIT ?', [limit])
      return Promise.all(list.map(summarize))
    },
    async hasOrder(saleId, userId) {
      return (
        (await rows(pool, 'SELECT 1 FROM fs_orders WHERE sale_id = ? AND user_id = ?', [saleId, userId])).length > 0
      )
    },
    async buckets(saleId) {
      return rows<BucketStock>(pool, 'SELECT bucket, remain FROM fs_stock WHERE sale_id = ? ORDER BY bucket', [saleId])
    },
    buyAtomic: (saleId, userId, quantity) =>
      inTransaction(pool, async (c) => {
        const taken = await affected(
          c,
          'UPDATE fs_stock SET remain = remain - ? WHERE sale_id = ? AND bucket = 0 AND remain >= ?',
          [quantity, saleId, quantity],
        )
        if (taken === 0) return { status: 'sold-out' }
        const orderId = randomUUID()
        await c.execute(INSERT_ORDER, [orderId, saleId, userId, quantity, 0, Date.now()])
        return { status: 'ordered', orderId, bucket: 0 }
      }),
    async claimBucket(saleId, bucket, token) {
      const c = await pool.getConnection()
      try {
        await c.beginTransaction()
        const claimed = await affected(
          c,
          'UPDATE fs_stock SET fence_token = ? WHERE sale_id = ? AND bucket = ? AND fence_token <= ?',
          [String(token), saleId, bucket, String(token)],
        )
        const [row] =
          claimed === 1
            ? await rows<{ remain: number }>(c, 'SELECT remain FROM fs_stock WHERE sale_id = ? AND bucket = ?', [
                saleId,
                bucket,
              ])
            : []
        await c.commit()
        return row?.remain
      } catch (error) {
        await c.rollback().catch(() => undefined)
        throw error
      } finally {
        c.release()
      }
    },
    commitFenced: (saleId, bucket, remain, token, userId, quantity) =>
      inTransaction(pool, async (c) => {
        if ((await affected(c, FENCED_WRITE, [remain, String(token), saleId, bucket, String(token)])) === 0) {
          return { status: 'stale' }
        }
        const orderId = randomUUID()
        await c.execute(INSERT_ORDER, [orderId, saleId, userId, quantity, bucket, Date.now()])
        return { status: 'ordered', orderId, bucket }
      }),
    async audit(saleId) {
      return auditOf(pool, saleId)
    },
    async close() {
      await pool.end()
    },
  }
}

/** The audit from one consistent snapshot (REPEATABLE READ, read only). */
async function auditOf(pool: mysql.Pool, saleId: string): Promise<SaleAudit | undefined> {
  const c = await pool.getConnection()
  try {
    await c.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY')
    const [sale] = await rows<{ stock: number }>(c, 'SELECT stock FROM fs_sales WHERE id = ?', [saleId])
    if (sale === undefined) return undefined
    const [t] = await rows<{ remaining: string; min_remain: number }>(
      c,
      'SELECT COALESCE(SUM(remain), 0) AS remaining, COALESCE(MIN(remain), 0) AS min_remain FROM fs_stock WHERE sale_id = ?',
      [saleId],
    )
    const orders = await rows<{ id: string; user_id: string; quantity: number }>(
      c,
      'SELECT id, user_id, quantity FROM fs_orders WHERE sale_id = ?',
      [saleId],
    )
    const perUser = new Map<string, number>()
    for (const o of orders) perUser.set(o.user_id, (perUser.get(o.user_id) ?? 0) + 1)
    return {
      initial: sale.stock,
      remaining: Number(t?.remaining ?? 0),
      minRemain: Number(t?.min_remain ?? 0),
      sold: orders.reduce((n, o) => n + o.quantity, 0),
      orders: orders.length,
      usersWithSeveralOrders: [...perUser.values()].filter((n) => n > 1).length,
      orderIds: new Set(orders.map((o) => o.id)),
    }
  } finally {
    await c.query('COMMIT').catch(() => undefined)
    c.release()
  }
}
