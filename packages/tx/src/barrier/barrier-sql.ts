/**
 * The barrier's statements per driver. Each works on the caller's own transaction handle: a `pg` client, a
 * mysql2/promise connection, or a better-sqlite3 database with a transaction open.
 */
import { checkPrefix } from '../store/schema.js'

/** The barrier row's key. */
export interface BarrierRow {
  readonly gid: string
  readonly branch: string
  readonly op: string
  readonly barrierId: string
  /** The op of the call that inserted the row (a cancel inserts the `try` row: that is how a late try is caught). */
  readonly reason: string
}

/** One driver's statements on one transaction handle. */
export interface BarrierSql {
  readonly dialect: 'postgres' | 'mysql' | 'sqlite'
  /** Inserts the row unless the key exists; true when inserted. A concurrent insert of the same key waits. */
  insertIgnore(row: BarrierRow): Promise<boolean>
  /** The `reason` of an existing row. */
  reasonOf(row: Omit<BarrierRow, 'reason'>): Promise<string | undefined>
  /** CREATE TABLE IF NOT EXISTS (never inside a MySQL business transaction: DDL commits it). */
  createTable(): Promise<void>
}

interface PgLike {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>
}
interface MysqlLike {
  query(sql: string, params?: unknown[]): Promise<[unknown, unknown]>
  execute(sql: string, params?: unknown[]): Promise<[unknown, unknown]>
}
interface SqliteLike {
  readonly inTransaction: boolean
  prepare(sql: string): { run(...p: unknown[]): { changes: number }; get(...p: unknown[]): unknown }
  exec(sql: string): unknown
}

/** Default barrier table. */
export const DEFAULT_BARRIER_TABLE = 'latchkey_tx_barrier'

const columns = (key: string) =>
  `gid ${key} NOT NULL, branch ${key} NOT NULL, op VARCHAR(16) NOT NULL, barrier_id VARCHAR(32) NOT NULL,
   reason VARCHAR(16) NOT NULL, created_at BIGINT NOT NULL`
const VALUES = '(gid, branch, op, barrier_id, reason, created_at)'
const values = (r: BarrierRow) => [r.gid, r.branch, r.op, r.barrierId, r.reason, Date.now()]
const key = (r: Omit<BarrierRow, 'reason'>) => [r.gid, r.branch, r.op, r.barrierId]

/** Statements for `trx`, recognised by shape: better-sqlite3 (`prepare`), mysql2 (`execute`), else `pg`. */
export function barrierSql(trx: unknown, table: string = DEFAULT_BARRIER_TABLE): BarrierSql {
  const t = checkPrefix(table)
  const h = trx as Partial<SqliteLike & MysqlLike & PgLike> | null
  if (typeof h !== 'object' || h === null || (typeof h.query !== 'function' && typeof h.prepare !== 'function')) {
    throw new TypeError(
      "latchkey-tx: barrier needs the caller's transaction: a pg client, a mysql2/promise connection or a better-sqlite3 database",
    )
  }
  if (typeof h.prepare === 'function' && 'inTransaction' in h) return sqliteSql(h as SqliteLike, t)
  if (typeof h.execute === 'function') return mysqlSql(h as MysqlLike, t)
  return pgSql(h as PgLike, t)
}

function pgSql(c: PgLike, t: string): BarrierSql {
  return {
    dialect: 'postgres',
    insertIgnore: async (r) =>
      ((
        await c.query(
          `INSERT INTO ${t} ${VALUES} VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (gid, branch, op, barrier_id) DO NOTHING`,
          values(r),
        )
      ).rowCount ?? 0) > 0,
    reasonOf: async (r) =>
      (await c.query(`SELECT reason FROM ${t} WHERE gid = $1 AND branch = $2 AND op = $3 AND barrier_id = $4`, key(r)))
        .rows[0]?.reason as string | undefined,
    createTable: async () => {
      await c.query(
        `CREATE TABLE IF NOT EXISTS ${t} (${columns('VARCHAR(191)')}, PRIMARY KEY (gid, branch, op, barrier_id))`,
      )
    },
  }
}

function mysqlSql(c: MysqlLike, t: string): BarrierSql {
  return {
    dialect: 'mysql',
    insertIgnore: async (r) => {
      const [result] = await c.query(`INSERT IGNORE INTO ${t} ${VALUES} VALUES (?, ?, ?, ?, ?, ?)`, values(r))
      return (result as { affectedRows: number }).affectedRows > 0
    },
    reasonOf: async (r) => {
      const [rows] = await c.query(
        `SELECT reason FROM ${t} WHERE gid = ? AND branch = ? AND op = ? AND barrier_id = ?`,
        key(r),
      )
      return (rows as { reason: string }[])[0]?.reason
    },
    createTable: async () => {
      await c.query(
        `CREATE TABLE IF NOT EXISTS ${t} (${columns('VARCHAR(191)')}, PRIMARY KEY (gid, branch, op, barrier_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
      )
    },
  }
}

function sqliteSql(db: SqliteLike, t: string): BarrierSql {
  return {
    dialect: 'sqlite',
    insertIgnore: async (r) =>
      db.prepare(`INSERT OR IGNORE INTO ${t} ${VALUES} VALUES (?, ?, ?, ?, ?, ?)`).run(...values(r)).changes > 0,
    reasonOf: async (r) =>
      (
        db
          .prepare(`SELECT reason FROM ${t} WHERE gid = ? AND branch = ? AND op = ? AND barrier_id = ?`)
          .get(...key(r)) as { reason: string } | undefined
      )?.reason,
    createTable: async () => {
      db.exec(`CREATE TABLE IF NOT EXISTS ${t} (${columns('TEXT')}, PRIMARY KEY (gid, branch, op, barrier_id))`)
    },
  }
}
