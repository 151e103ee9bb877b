/**
 * The participant's durable 3PC state, one row per (gid, branch) in its own database, read and written on the
 * handle of the local transaction that also holds the business writes: a `pg` client, a mysql2/promise
 * connection, or a better-sqlite3 database with a transaction open.
 */
import { checkPrefix, columnTypes } from '../store/schema.js'

/**
 * Where a participant is: `voted` (said yes, nothing locked, waiting for preCommit), `refused` (said no),
 * `precommitted` (prepared and acked, waiting for doCommit), `committed`, `aborted`.
 */
export type ParticipantState = 'voted' | 'refused' | 'precommitted' | 'committed' | 'aborted'

/** Who moved the participant to a final state: the coordinator's message or the participant's own timeout. */
export type DecidedBy = 'coordinator' | 'timeout'

/** One participant's state of one transaction. */
export interface StateRow {
  readonly gid: string
  readonly branch: string
  readonly state: ParticipantState
  readonly decidedBy: DecidedBy | null
  /** Epoch ms when a `voted` participant aborts and a `precommitted` one commits on its own. */
  readonly deadlineAt: number | null
  readonly input: unknown
}

/** The statements on one transaction handle. */
export interface ParticipantSql {
  /** The row, locked until the transaction ends (SQLite: BEGIN IMMEDIATE already holds the write lock). */
  lock(gid: string, branch: string): Promise<StateRow | undefined>
  insert(row: StateRow): Promise<void>
  update(gid: string, branch: string, change: Pick<StateRow, 'state' | 'decidedBy' | 'deadlineAt'>): Promise<void>
  /** Rows waiting (`voted`, `precommitted`) whose deadline has passed. */
  due(now: number, limit: number): Promise<{ gid: string; branch: string }[]>
  createTable(): Promise<void>
}

/** Default state table. */
export const DEFAULT_3PC_TABLE = 'latchkey_tx_3pc'

type Query = (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>

interface PgLike {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>
}
interface MysqlLike {
  query(sql: string, params?: unknown[]): Promise<[unknown, unknown]>
  execute(sql: string, params?: unknown[]): Promise<[unknown, unknown]>
}
interface SqliteLike {
  readonly inTransaction: boolean
  prepare(sql: string): { run(...p: unknown[]): unknown; all(...p: unknown[]): unknown[]; reader: boolean }
}

/** Statements for `trx`, recognised by shape as the barrier does: better-sqlite3, mysql2, else `pg`. */
export function participantSql(trx: unknown, table: string = DEFAULT_3PC_TABLE): ParticipantSql {
  const t = checkPrefix(table)
  const h = trx as Partial<SqliteLike & MysqlLike & PgLike>
  let dialect: 'sqlite' | 'mysql' | 'postgres'
  let query: Query
  if (typeof h.prepare === 'function' && 'inTransaction' in h) {
    const db = h as SqliteLike
    dialect = 'sqlite'
    query = async (sql, params) => {
      const statement = db.prepare(sql)
      if (statement.reader) return statement.all(...params) as Record<string, unknown>[]
      statement.run(...params)
      return []
    }
  } else if (typeof h.execute === 'function') {
    dialect = 'mysql'
    query = async (sql, params) => {
      const [rows] = await (h as MysqlLike).query(sql, params)
      return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
    }
  } else {
    dialect = 'postgres'
    query = async (sql, params) => {
      let n = 0
      return (
        await (h as PgLike).query(
          sql.replace(/\?/g, () => `$${++n}`),
          params,
        )
      ).rows
    }
  }
  const forUpdate = dialect === 'sqlite' ? '' : ' FOR UPDATE'
  const { key, text, big, engine } = columnTypes(dialect)
  return {
    lock: async (gid, branch) => {
      const rows = await query(
        `SELECT gid, branch, state, decided_by, deadline_at, input FROM ${t} WHERE gid = ? AND branch = ?${forUpdate}`,
        [gid, branch],
      )
      return rows[0] === undefined ? undefined : toRow(rows[0])
    },
    insert: async (r) => {
      await query(
        `INSERT INTO ${t} (gid, branch, state, decided_by, deadline_at, input, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        [r.gid, r.branch, r.state, r.decidedBy, r.deadlineAt, JSON.stringify(r.input ?? null), Date.now()],
      )
    },
    update: async (gid, branch, c) => {
      await query(
        `UPDATE ${t} SET state = ?, decided_by = ?, deadline_at = ?, updated_at = ? WHERE gid = ? AND branch = ?`,
        [c.state, c.decidedBy, c.deadlineAt, Date.now(), gid, branch],
      )
    },
    due: async (now, limit) =>
      (
        await query(
          `SELECT gid, branch FROM ${t} WHERE state IN ('voted', 'precommitted') AND deadline_at <= ? ORDER BY deadline_at LIMIT ${Math.trunc(limit)}`,
          [now],
        )
      ).map((r) => ({ gid: String(r.gid), branch: String(r.branch) })),
    createTable: async () => {
      const index = dialect === 'mysql' ? ', INDEX (state, deadline_at)' : ''
      await query(
        `CREATE TABLE IF NOT EXISTS ${t} (gid ${key} NOT NULL, branch ${key} NOT NULL, state VARCHAR(16) NOT NULL,
          decided_by VARCHAR(16), deadline_at ${big}, input ${text}, updated_at ${big} NOT NULL,
          PRIMARY KEY (gid, branch)${index})${engine}`,
        [],
      )
      if (dialect !== 'mysql') {
        await query(`CREATE INDEX IF NOT EXISTS ${t}_due ON ${t} (state, deadline_at)`, [])
      }
    },
  }
}

function toRow(r: Record<string, unknown>): StateRow {
  return {
    gid: String(r.gid),
    branch: String(r.branch),
    state: String(r.state) as ParticipantState,
    decidedBy: r.decided_by === null ? null : (String(r.decided_by) as DecidedBy),
    deadlineAt: r.deadline_at === null ? null : Number(r.deadline_at),
    input: typeof r.input === 'string' ? JSON.parse(r.input) : null,
  }
}
