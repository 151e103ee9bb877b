/**
 * The log's writes on PostgreSQL as single statements: data-modifying CTEs make "create the transaction with its
 * branches and history" and "apply one fenced transition" one autocommit statement each, one round trip and no
 * BEGIN/COMMIT, where a transaction of separate statements costs five round trips. A statement is atomic, and the
 * branch and history parts read the global row's `RETURNING`, so a write refused by the fence changes nothing.
 */
import type { SqlStatement } from './sql-driver.js'
import type { BranchChange, NewTx, TxChange } from './types.js'

const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value))

/** `col = ?` for each defined value: undefined keeps the column. */
function sets(values: Record<string, unknown>): { sql: string[]; params: unknown[] } {
  const defined = Object.entries(values).filter(([, v]) => v !== undefined)
  return { sql: defined.map(([col]) => `${col} = ?`), params: defined.map(([, v]) => v) }
}

/** INSERT of the global row, its branches (one `unnest`) and the `created` history entry. */
export function pgCreate(p: string, tx: NewTx, token: bigint, now: number, nowSql: string): SqlStatement {
  const lease = tx.leaseMs === undefined ? '0' : `${nowSql} + ?`
  const sql = `WITH g AS (
      INSERT INTO ${p}global (gid, kind, name, status, parked_from, input, deadline_at, error, fence, version,
        created_at, updated_at, lease_until) VALUES (?, ?, ?, ?, NULL, ?, ?, NULL, ?, 1, ?, ?, ${lease}) RETURNING gid),
    b AS (INSERT INTO ${p}branch (gid, branch, op, seq, status, attempts, result, last_error, updated_at)
      SELECT g.gid, x.branch, x.op, x.seq, 'pending', 0, NULL, NULL, ?::bigint
      FROM g, unnest(?::text[], ?::text[], ?::int[]) AS x(branch, op, seq))
    INSERT INTO ${p}history (gid, branch, op, type, detail, fence, at)
      SELECT gid, NULL, NULL, 'created', ?::text, ?::bigint, ?::bigint FROM g`
  const params: unknown[] = [tx.gid, tx.kind, tx.name, tx.status, json(tx.input), tx.deadlineAt, token, now, now]
  if (tx.leaseMs !== undefined) params.push(tx.leaseMs)
  params.push(
    now,
    tx.branches.map((b) => b.id),
    tx.branches.map((b) => b.op),
    tx.branches.map((b) => b.seq),
    tx.status,
    token,
    now,
  )
  return { sql, params }
}

/**
 * One fenced transition: the global row is updated only while `token` is the highest that wrote it and every
 * branch the change names exists (so a bad branch changes nothing, as a rolled-back transaction would); the
 * statement returns `n = 1` when it applied.
 */
export function pgWrite(p: string, gid: string, token: bigint, change: TxChange, now: number, nowSql: string) {
  const branches = change.branches ?? []
  const g = sets({
    fence: token,
    updated_at: now,
    status: change.status,
    parked_from: change.parkedFrom,
    error: change.error,
  })
  const params: unknown[] = [...g.params]
  const lease = change.leaseMs === undefined ? '' : `, lease_until = ${change.leaseMs === 0 ? '0' : `${nowSql} + ?`}`
  if (change.leaseMs !== undefined && change.leaseMs !== 0) params.push(change.leaseMs)
  params.push(gid, token)
  let where = 'gid = ? AND fence <= ?'
  const named = [...new Map(branches.map((b) => [`${b.id}/${b.op}`, b])).values()]
  if (named.length > 0) {
    where += ` AND (SELECT count(*) FROM ${p}branch WHERE gid = ? AND (${named.map(() => '(branch = ? AND op = ?)').join(' OR ')})) = ${named.length}`
    params.push(gid, ...named.flatMap((b) => [b.id, b.op]))
  }
  const parts = [
    `g AS (UPDATE ${p}global SET ${g.sql.join(', ')}, version = version + 1${lease} WHERE ${where} RETURNING gid)`,
  ]
  branches.forEach((b, i) => {
    const u = branchSets(b, now)
    parts.push(
      `b${i} AS (UPDATE ${p}branch SET ${u.sql.join(', ')} WHERE gid = (SELECT gid FROM g) AND branch = ? AND op = ?)`,
    )
    params.push(...u.params, b.id, b.op)
  })
  const e = change.event
  parts.push(`h AS (INSERT INTO ${p}history (gid, branch, op, type, detail, fence, at)
    SELECT gid, ?::text, ?::text, ?::text, ?::text, ?::bigint, ?::bigint FROM g)`)
  params.push(e.branch ?? null, e.op ?? null, e.type, e.detail ?? null, token, now)
  return { sql: `WITH ${parts.join(',\n')} SELECT count(*)::int AS n FROM g`, params }
}

function branchSets(b: BranchChange, now: number): { sql: string[]; params: unknown[] } {
  return sets({
    updated_at: now,
    status: b.status,
    attempts: b.attempts,
    result: b.result === undefined ? undefined : json(b.result),
    last_error: b.lastError,
  })
}
