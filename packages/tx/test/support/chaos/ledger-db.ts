/**
 * A participant's own database for the fastify and chaos tests: an accounts table, an effects log (one row per
 * business effect, written in the same local transaction as the effect, so a second application of one call
 * shows as a second row) and a barrier table, all with a per-run prefix. Works on PostgreSQL, MariaDB and SQLite.
 */
import Database from 'better-sqlite3'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { ensureBarrierTable } from '../../../src/barrier/index.js'
import type { Dialect } from '../databases.js'
import { MYSQL_URL, POSTGRES_URL } from '../databases.js'

/** Raw SQL with `?` placeholders on a transaction handle or the database itself. */
export type Query = (handle: unknown, sql: string, params?: unknown[]) => Promise<Record<string, unknown>[]>

export interface LedgerDb {
  readonly dialect: Dialect
  /** What the fastify plugin takes: pg Pool, mysql2/promise pool, better-sqlite3 database. */
  readonly db: unknown
  readonly tables: { readonly acct: string; readonly effects: string; readonly barrier: string }
  readonly query: Query
  /** Creates the three tables (idempotent) and sets the given balances. */
  create(balances: Record<number, number>): Promise<void>
  /**
   * Inside `trx`: moves `delta` on account `id` and logs the effect. When `guarded`, false (nothing done) if the
   * balance would go negative; a compensation is not guarded (it must succeed; the money comes back later).
   */
  apply(
    trx: unknown,
    e: { gid: string; branch: string; op: string; id: number; delta: number; frozen?: number },
    guarded?: boolean,
  ): Promise<boolean>
  /** Sum of all balances, frozen amounts (TCC holds) included. */
  total(): Promise<number>
  /** Sum of the frozen amounts (0 once every TCC transfer is confirmed or cancelled). */
  frozen(): Promise<number>
  balance(id: number): Promise<number>
  /** Effect rows of `gid` (all when omitted) as `branch:op` strings. */
  effects(gid?: string): Promise<string[]>
  /** Drops the tables (when `drop`) and closes the connection pool. */
  close(drop: boolean): Promise<void>
}

function pgQuery(): Query {
  return async (handle, sql, params = []) => {
    let n = 0
    return (
      await (handle as pg.Pool).query(
        sql.replace(/\?/g, () => `$${++n}`),
        params,
      )
    ).rows
  }
}

const mysqlQuery: Query = async (handle, sql, params = []) => {
  const [rows] = await (handle as mysql.Pool).query(sql, params)
  return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
}

const sqliteQuery: Query = async (handle, sql, params = []) => {
  const s = (handle as Database.Database).prepare(sql)
  if (s.reader) return s.all(...params) as Record<string, unknown>[]
  s.run(...params)
  return []
}

/** Opens the database of one participant; `prefix` names its tables (`<prefix>acct`, ...); `path` for SQLite. */
export function openLedgerDb(dialect: Dialect, prefix: string, path?: string): LedgerDb {
  const tables = { acct: `${prefix}acct`, effects: `${prefix}effects`, barrier: `${prefix}barrier` }
  let db: unknown
  let query: Query
  let end: () => Promise<void>
  if (dialect === 'postgres') {
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 6 })
    pool.on('error', () => undefined)
    db = pool
    query = pgQuery()
    end = () => pool.end()
  } else if (dialect === 'mysql') {
    const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 6 })
    db = pool
    query = mysqlQuery
    end = () => pool.end()
  } else {
    if (path === undefined) throw new TypeError('openLedgerDb: SQLite needs a path')
    const sqlite = new Database(path)
    sqlite.pragma('journal_mode = WAL')
    sqlite.pragma('busy_timeout = 5000')
    db = sqlite
    query = sqliteQuery
    end = async () => void sqlite.close()
  }
  const num = async (sql: string, params: unknown[] = []) =>
    Number(Object.values((await query(db, sql, params))[0] ?? {})[0] ?? 0)
  return {
    dialect,
    db,
    tables,
    query,
    async create(balances) {
      await query(
        db,
        `CREATE TABLE IF NOT EXISTS ${tables.acct} (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL, frozen INTEGER NOT NULL DEFAULT 0)`,
      )
      await query(
        db,
        `CREATE TABLE IF NOT EXISTS ${tables.effects} (gid VARCHAR(191) NOT NULL, branch VARCHAR(64) NOT NULL, op VARCHAR(16) NOT NULL, acct INTEGER NOT NULL, delta INTEGER NOT NULL)`,
      )
      await ensureBarrierTable(db, { table: tables.barrier })
      for (const [id, bal] of Object.entries(balances)) {
        await query(db, `DELETE FROM ${tables.acct} WHERE id = ?`, [Number(id)])
        await query(db, `INSERT INTO ${tables.acct} (id, bal) VALUES (?, ?)`, [Number(id), bal])
      }
    },
    async apply(trx, e, guarded = true) {
      // FOR UPDATE serialises concurrent moves on one account, so the guard (balance stays >= 0) cannot race.
      const before = await query(
        trx,
        `SELECT bal FROM ${tables.acct} WHERE id = ?${dialect === 'sqlite' ? '' : ' FOR UPDATE'}`,
        [e.id],
      )
      if (guarded && Number(before[0]?.bal) + e.delta < 0) return false
      await query(trx, `UPDATE ${tables.acct} SET bal = bal + ?, frozen = frozen + ? WHERE id = ?`, [
        e.delta,
        e.frozen ?? 0,
        e.id,
      ])
      await query(trx, `INSERT INTO ${tables.effects} (gid, branch, op, acct, delta) VALUES (?, ?, ?, ?, ?)`, [
        e.gid,
        e.branch,
        e.op,
        e.id,
        e.delta,
      ])
      return true
    },
    total: () => num(`SELECT COALESCE(SUM(bal + frozen), 0) FROM ${tables.acct}`),
    frozen: () => num(`SELECT COALESCE(SUM(frozen), 0) FROM ${tables.acct}`),
    balance: (id) => num(`SELECT bal FROM ${tables.acct} WHERE id = ?`, [id]),
    async effects(gid) {
      const where = gid === undefined ? '' : ' WHERE gid = ?'
      const rows = await query(db, `SELECT branch, op FROM ${tables.effects}${where}`, gid === undefined ? [] : [gid])
      return rows.map((r) => `${String(r.branch)}:${String(r.op)}`)
    },
    async close(drop) {
      if (drop) {
        for (const t of Object.values(tables)) await query(db, `DROP TABLE IF EXISTS ${t}`).catch(() => undefined)
      }
      await end()
    },
  }
}
