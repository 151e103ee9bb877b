import { checkId } from '../branch.js'
import { TxError } from '../errors.js'
import { type BarrierSql, barrierSql } from './barrier-sql.js'

/** Which branch call the barrier guards: the fields every branch function receives in its context. */
export interface BarrierKey {
  readonly gid: string
  readonly branch: string
  /** `try`, `confirm`, `cancel` (TCC) or `action`, `compensate` (saga). */
  readonly op: string
  /** Distinguishes several barriers in one branch call. Default `01`. */
  readonly barrierId?: string
  /** The barrier table. Default `latchkey_tx_barrier` (create it once with `ensureBarrierTable`). */
  readonly table?: string
}

/**
 * What the barrier did: `applied` (the business function ran, its result is here), `duplicate` (this call was
 * already applied), `null-compensation` (a cancel/compensate whose try/action never ran: nothing to undo) or
 * `hanging` (a try/action arriving after its cancel/compensate: refused). All four are success for the caller.
 */
export type BarrierOutcome<T> =
  | { readonly status: 'applied'; readonly result: T }
  | { readonly status: 'duplicate' | 'null-compensation' | 'hanging' }

/** The op a compensating op undoes. */
const ORIGIN: Readonly<Record<string, string>> = { cancel: 'try', compensate: 'action' }
const OPS = ['try', 'confirm', 'cancel', 'action', 'compensate']

/**
 * DTM's sub-transaction barrier, inside the caller's own database transaction. It makes a branch idempotent,
 * turns a cancel that arrives before its try into a no-op (null compensation), and refuses a try that arrives
 * after its cancel (hanging), by insert-ignore on the unique key `(gid, branch, op, barrier_id)` ("change,
 * don't check": the unique index serialises a concurrent try and cancel; a SELECT-then-INSERT would race).
 *
 * A compensating op first inserts the row of the op it undoes (`reason` = itself): if that insert succeeds,
 * the forward op never ran (null compensation), and the forward op, when it comes, finds its row taken
 * (hanging). Then the op's own row: already there means a repeated call (or the hanging case).
 *
 * The barrier never commits or rolls back: commit when it resolves, roll back when it rejects (a rejection is
 * the business function's error or a database error, never swallowed). A rejection with `retryable: true`
 * (`BARRIER_CONFLICT`: under PostgreSQL REPEATABLE READ a concurrent try/cancel committed after this
 * transaction's snapshot; a deadlock) means: roll back and make the same call again. Run it on the connection that holds
 * the transaction: a `pg` client after `BEGIN`, a mysql2/promise connection after `beginTransaction()`, a
 * better-sqlite3 database after `BEGIN IMMEDIATE`.
 *
 * @example
 * const client = await pool.connect()
 * await client.query('BEGIN')
 * try {
 *   await barrier(client, { gid, branch, op }, (c) => c.query('UPDATE acct SET bal = bal - $1 WHERE id = $2', [5, 1]))
 *   await client.query('COMMIT')
 * } catch (e) { await client.query('ROLLBACK'); throw e } finally { client.release() }
 */
export async function barrier<Trx, T>(
  trx: Trx,
  key: BarrierKey,
  fn: (trx: Trx) => T | Promise<T>,
): Promise<BarrierOutcome<Awaited<T>>> {
  if (typeof key !== 'object' || key === null) throw new TypeError('latchkey-tx: barrier needs { gid, branch, op }')
  checkId('barrier gid', key.gid)
  checkId('barrier branch', key.branch)
  if (!OPS.includes(key.op)) {
    throw new RangeError(`latchkey-tx: barrier op must be one of ${OPS.join(', ')}, received ${JSON.stringify(key.op)}`)
  }
  const barrierId = key.barrierId === undefined ? '01' : checkId('barrierId', key.barrierId)
  if (typeof fn !== 'function') throw new TypeError('latchkey-tx: barrier needs a business function (trx) => ...')
  const sql = barrierSql(trx, key.table)
  if (sql.dialect === 'sqlite' && !(trx as { inTransaction: boolean }).inTransaction) {
    throw new TypeError('latchkey-tx: barrier on better-sqlite3 needs an open transaction (db.exec("BEGIN IMMEDIATE"))')
  }
  const row = { gid: key.gid, branch: key.branch, barrierId }
  const origin = ORIGIN[key.op]
  const originInserted = origin === undefined ? false : await insert(sql, { ...row, op: origin, reason: key.op })
  const inserted = await insert(sql, { ...row, op: key.op, reason: key.op })
  if (originInserted) return { status: 'null-compensation' }
  if (!inserted) {
    const reason = await sql.reasonOf({ ...row, op: key.op })
    return { status: reason !== undefined && reason !== key.op ? 'hanging' : 'duplicate' }
  }
  return { status: 'applied', result: await fn(trx) }
}

/**
 * Errors after which the same call in a new transaction will work: PostgreSQL's serialization failure (a
 * REPEATABLE READ snapshot that missed the row a concurrent try/cancel committed) and deadlock, MySQL's
 * deadlock and lock wait timeout.
 */
const CONFLICTS = new Set(['40001', '40P01', 'ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT'])

async function insert(sql: BarrierSql, row: Parameters<BarrierSql['insertIgnore']>[0]): Promise<boolean> {
  try {
    return await sql.insertIgnore(row)
  } catch (error) {
    const code = String((error as { code?: unknown })?.code ?? '')
    if (CONFLICTS.has(code)) {
      throw new TxError(
        `latchkey-tx: the barrier of ${row.gid}/${row.branch} met a concurrent call (${code}); roll back and call again`,
        { code: 'BARRIER_CONFLICT', retryable: true, gid: row.gid, cause: error },
      )
    }
    const text = String((error as { message?: unknown })?.message ?? error)
    if (/does not exist|doesn't exist|no such table/i.test(text)) {
      throw new TxError('latchkey-tx: the barrier table is missing; create it once with ensureBarrierTable(db)', {
        code: 'BARRIER_TABLE_MISSING',
        cause: error,
      })
    }
    throw error
  }
}

/**
 * Creates the barrier table if missing, on a pg Pool or client, a mysql2/promise pool or connection, or a
 * better-sqlite3 database. Call it once at start-up, outside any business transaction (MySQL commits an open
 * transaction on DDL).
 *
 * @example
 * await ensureBarrierTable(pool)
 */
export async function ensureBarrierTable(db: unknown, options: { table?: string } = {}): Promise<void> {
  await barrierSql(db, options.table).createTable()
}
