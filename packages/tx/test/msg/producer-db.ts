/**
 * A producer's database per dialect for the transactional-message tests: the handle `doAndSubmit` takes (pg Pool,
 * mysql2/promise pool, better-sqlite3 Database), a second independent handle (what a coordinator in another
 * process would use for its check-back), raw SQL, and the tables of this test (random prefix): `orders` and the
 * barrier table. `spec` lets a child process open the same database.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { type Dialect, MYSQL_URL, POSTGRES_URL, tempDir, uniquePrefix } from '../support/databases.js'

export interface ProducerDb {
  readonly dialect: Dialect
  readonly prefix: string
  /** The barrier table name. */
  readonly barrierTable: string
  /** `<dialect> <url or path> <prefix>` for a child process: {@link openProducerDb} with `spec`. */
  readonly spec: string
  readonly db: object
  /** Another pool / connection on the same database. */
  readonly other: object
  sql(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  /** The local write the tests make: one order row. */
  insertOrder(trx: object, gid: string): Promise<void>
  orders(gid: string): Promise<number>
  barrierReason(gid: string): Promise<string | undefined>
  close(): Promise<void>
  /** Drops this test's tables, then closes. */
  drop(): Promise<void>
}

const dollars = (sql: string) => {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

/** Opens a producer database: a new one (random prefix, temp SQLite file), or the one `spec` names. */
export function openProducerDb(dialect: Dialect, spec?: { where: string; prefix: string }): ProducerDb {
  const prefix = spec?.prefix ?? uniquePrefix('lmsg')
  const tmp = dialect === 'sqlite' && spec === undefined ? tempDir() : undefined
  const where =
    spec?.where ??
    (dialect === 'sqlite' ? join(tmp?.dir ?? '', 'shop.db') : dialect === 'postgres' ? POSTGRES_URL : MYSQL_URL)
  const base = {
    dialect,
    prefix,
    barrierTable: `${prefix}barrier`,
    spec: `${dialect} ${where} ${prefix}`,
  }
  let handles: { db: object; other: object; sql: ProducerDb['sql']; close(): Promise<void> }
  if (dialect === 'sqlite') {
    const open = () => {
      const d = new Database(where)
      d.pragma('journal_mode = WAL')
      d.pragma('busy_timeout = 5000')
      return d
    }
    const db = open()
    const other = open()
    handles = {
      db,
      other,
      sql: async (sql, params = []) => {
        const s = other.prepare(sql)
        if (s.reader) return s.all(...params) as Record<string, unknown>[]
        s.run(...params)
        return []
      },
      close: async () => {
        db.close()
        other.close()
        tmp?.remove()
      },
    }
  } else if (dialect === 'postgres') {
    const db = new pg.Pool({ connectionString: where, max: 4 })
    const other = new pg.Pool({ connectionString: where, max: 4 })
    for (const p of [db, other]) p.on('error', () => undefined)
    handles = {
      db,
      other,
      sql: async (sql, params = []) => (await other.query(dollars(sql), params)).rows,
      close: async () => {
        await db.end()
        await other.end()
      },
    }
  } else {
    const db = mysql.createPool({ uri: where, connectionLimit: 4 })
    const other = mysql.createPool({ uri: where, connectionLimit: 4 })
    handles = {
      db,
      other,
      sql: async (sql, params = []) => {
        const [rows] = await other.query(sql, params)
        return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
      },
      close: async () => {
        await db.end()
        await other.end()
      },
    }
  }
  const orders = `${prefix}orders`
  return {
    ...base,
    ...handles,
    async insertOrder(trx, gid) {
      if (dialect === 'sqlite') (trx as Database.Database).prepare(`INSERT INTO ${orders} (gid) VALUES (?)`).run(gid)
      else if (dialect === 'postgres')
        await (trx as pg.PoolClient).query(`INSERT INTO ${orders} (gid) VALUES ($1)`, [gid])
      else await (trx as mysql.PoolConnection).query(`INSERT INTO ${orders} (gid) VALUES (?)`, [gid])
    },
    async orders(gid) {
      const rows = await handles.sql(`SELECT COUNT(*) AS n FROM ${orders} WHERE gid = ?`, [gid])
      return Number(rows[0]?.n)
    },
    async barrierReason(gid) {
      const rows = await handles.sql(`SELECT reason FROM ${prefix}barrier WHERE gid = ? AND branch = '00'`, [gid])
      return rows[0]?.reason as string | undefined
    },
    close: handles.close,
    async drop() {
      if (dialect !== 'sqlite') {
        await handles.sql(`DROP TABLE IF EXISTS ${orders}`)
        await handles.sql(`DROP TABLE IF EXISTS ${prefix}barrier`)
      }
      await handles.close()
    },
  }
}

/** Creates the orders table. */
export async function createOrders(p: ProducerDb): Promise<void> {
  await p.sql(`CREATE TABLE IF NOT EXISTS ${p.prefix}orders (gid VARCHAR(191) NOT NULL PRIMARY KEY)`)
}
