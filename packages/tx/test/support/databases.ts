/**
 * The three test databases, each behind a store with its own random table prefix so that parallel test files
 * (and other helpers' runs on the shared servers) never see each other's rows. `drop()` removes the tables.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { mysqlStore, postgresStore, sqliteStore, type TxStore } from '../../src/index.js'

export const MYSQL_URL = process.env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
export const POSTGRES_URL = process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

export type Dialect = 'sqlite' | 'postgres' | 'mysql'
export const DIALECTS: readonly Dialect[] = ['sqlite', 'postgres', 'mysql']

/** A random table prefix such as `ltx_3f9a1c_`. */
export function uniquePrefix(tag = 'ltx'): string {
  return `${tag}_${randomBytes(4).toString('hex')}_`
}

/** A fresh temporary directory, removed by the returned function. */
export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-tx-'))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A database under test: a store factory and raw SQL access to it. */
export interface TestDatabase {
  readonly dialect: Dialect
  readonly prefix: string
  /** A new store on this database (several may share it, as several coordinators would). */
  store(): TxStore
  /** Runs raw SQL (with `?` placeholders). */
  sql(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  /** Deletes the latchkey lock rows (the default recovery leases) whose key starts with `prefix`. */
  dropLocks(prefix: string): Promise<void>
  /** Drops the log's tables and closes the pools. */
  drop(): Promise<void>
}

const LOCK_TABLES = {
  postgres: ['latchkey_holders', 'latchkey_waiters', 'latchkey_locks'],
  mysql: ['latchkey_holders', 'latchkey_waiters', 'latchkey_locks', 'latchkey_row_locks', 'latchkey_fences'],
}

export function openTestDatabase(dialect: Dialect, prefix = uniquePrefix()): TestDatabase {
  const tables = ['global', 'branch', 'history'].map((t) => `${prefix}${t}`)
  if (dialect === 'sqlite') {
    const tmp = tempDir()
    const path = join(tmp.dir, 'tx.db')
    const raw = new Database(path)
    return {
      dialect,
      prefix,
      store: () => sqliteStore({ path, tablePrefix: prefix }),
      sql: async (sql, params = []) => {
        const s = raw.prepare(sql)
        if (s.reader) return s.all(...params) as Record<string, unknown>[]
        s.run(...params)
        return []
      },
      dropLocks: async () => undefined,
      drop: async () => {
        raw.close()
        tmp.remove()
      },
    }
  }
  if (dialect === 'postgres') {
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 8 })
    pool.on('error', () => undefined)
    return {
      dialect,
      prefix,
      store: () => postgresStore({ pool, tablePrefix: prefix }),
      sql: async (sql, params = []) => {
        let n = 0
        return (
          await pool.query(
            sql.replace(/\?/g, () => `$${++n}`),
            params,
          )
        ).rows
      },
      dropLocks: async (prefix) => {
        const bytes = Buffer.from(prefix, 'utf8')
        for (const t of LOCK_TABLES.postgres) {
          const { rows } = await pool.query('SELECT to_regclass($1) IS NOT NULL AS ok', [t])
          if (rows[0]?.ok !== true) continue
          await pool.query(`DELETE FROM ${t} WHERE substring(lock_key FROM 1 FOR $2) = $1`, [bytes, bytes.length])
        }
      },
      drop: async () => {
        await pool.query(`DROP TABLE IF EXISTS ${tables.join(', ')}`)
        await pool.end()
      },
    }
  }
  const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 8 })
  return {
    dialect,
    prefix,
    store: () => mysqlStore({ pool, tablePrefix: prefix }),
    sql: async (sql, params = []) => {
      const [rows] = await pool.query(sql, params)
      return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
    },
    dropLocks: async (prefix) => {
      const [rows] = await pool.query(
        'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (?)',
        [LOCK_TABLES.mysql],
      )
      for (const { t } of rows as { t: string }[]) {
        await pool.query(`DELETE FROM ${t} WHERE LEFT(lock_key, LENGTH(?)) = ?`, [prefix, prefix])
      }
    },
    drop: async () => {
      await pool.query(`DROP TABLE IF EXISTS ${tables.join(', ')}`)
      await pool.end()
    },
  }
}
