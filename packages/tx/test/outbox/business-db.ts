/**
 * A "business" database per dialect for the outbox/inbox tests: the caller's own connection, a way to run a
 * function in a native transaction on it (pg client BEGIN/COMMIT, mysql2 beginTransaction, better-sqlite3
 * db.transaction), and the store URL that points the outbox/inbox at the same database with random tables.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { type Dialect, MYSQL_URL, POSTGRES_URL, tempDir, uniquePrefix } from '../support/databases.js'

export interface BusinessDb {
  readonly dialect: Dialect
  readonly prefix: string
  /** The store URL for createOutbox/createInbox, with this test's table prefix. */
  readonly store: string
  /**
   * Runs `fn` in one transaction of the caller's connection. On SQLite `fn` runs inside db.transaction(), so its
   * database work must be synchronous (it may return a promise, which is awaited after the commit).
   */
  tx<T>(fn: (trx: object) => T | Promise<T>): Promise<T>
  /** Raw SQL with `?` placeholders, outside any transaction. */
  sql(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  /** A statement in the caller's transaction (`trx` as given to `fn`). */
  inTx(trx: object, sql: string, params?: unknown[]): Promise<void> | undefined
  /** Drops the given tables (names without prefix) and closes the connections. */
  drop(tables: string[]): Promise<void>
}

export function openBusinessDb(dialect: Dialect, prefix = uniquePrefix('lob')): BusinessDb {
  if (dialect === 'sqlite') {
    const tmp = tempDir()
    const path = join(tmp.dir, 'shop.db')
    const db = new Database(path)
    db.pragma('journal_mode = WAL')
    db.pragma('busy_timeout = 5000')
    return {
      dialect,
      prefix,
      store: `sqlite:${path}?tablePrefix=${prefix}`,
      async tx(fn) {
        // better-sqlite3 refuses a transaction function that returns a promise: keep it out of the transaction.
        let out: unknown
        db.transaction(() => {
          out = { value: fn(db) }
        })()
        return await (out as { value: never }).value
      },
      sql: async (sql, params = []) => {
        const s = db.prepare(sql)
        if (s.reader) return s.all(...params) as Record<string, unknown>[]
        s.run(...params)
        return []
      },
      inTx: (_trx, sql, params = []) => {
        db.prepare(sql).run(...params)
        return undefined
      },
      drop: async () => {
        db.close()
        tmp.remove()
      },
    }
  }
  if (dialect === 'postgres') {
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 6 })
    pool.on('error', () => undefined)
    const dollars = (sql: string) => {
      let n = 0
      return sql.replace(/\?/g, () => `$${++n}`)
    }
    return {
      dialect,
      prefix,
      store: `${POSTGRES_URL}?tablePrefix=${prefix}`,
      async tx(fn) {
        const client = await pool.connect()
        try {
          await client.query('BEGIN')
          const result = await fn(client)
          await client.query('COMMIT')
          return result
        } catch (error) {
          await client.query('ROLLBACK')
          throw error
        } finally {
          client.release()
        }
      },
      sql: async (sql, params = []) => (await pool.query(dollars(sql), params)).rows,
      inTx: async (trx, sql, params = []) => {
        await (trx as pg.PoolClient).query(dollars(sql), params)
      },
      drop: async (tables) => {
        await pool.query(`DROP TABLE IF EXISTS ${tables.map((t) => prefix + t).join(', ')}`)
        await pool.end()
      },
    }
  }
  const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 6 })
  return {
    dialect,
    prefix,
    store: `${MYSQL_URL}?tablePrefix=${prefix}`,
    async tx(fn) {
      const conn = await pool.getConnection()
      try {
        await conn.beginTransaction()
        const result = await fn(conn)
        await conn.commit()
        return result
      } catch (error) {
        await conn.rollback()
        throw error
      } finally {
        conn.release()
      }
    },
    sql: async (sql, params = []) => {
      const [rows] = await pool.query(sql, params)
      return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
    },
    inTx: async (trx, sql, params = []) => {
      await (trx as mysql.PoolConnection).query(sql, params)
    },
    drop: async (tables) => {
      await pool.query(`DROP TABLE IF EXISTS ${tables.map((t) => prefix + t).join(', ')}`)
      await pool.end()
    },
  }
}
