/**
 * The log's writes on PostgreSQL as data-modifying CTEs: "create the transaction with its branches and history"
 * and "apply one fenced transition" are each a few CTEs named `<name>g`, `<name>b...`, `<name>h`, so that any
 * number of them, for distinct transactions, make one autocommit statement (see `group-commit.ts`): one round
 * trip and one commit, where a transaction of separate statements costs five round trips and a commit each. A
 * statement is atomic, and the branch and history parts read the global row's `RETURNING`, so a write refused by
 * its fence (or a create whose gid exists) changes nothing; `<name>g` has one row when it applied.
 */
import type { InitialRows } from './initial-rows.js'
import type { BranchChange, HistoryEvent, NewTx, TxChange } from './types.js'

/** One write as CTEs: `applied` counts 1 when it took effect. */
export interface CteWrite {
  readonly ctes: string[]
  readonly params: unknown[]
  readonly applied: string
}

/** Several writes (of distinct transactions) as one statement; row `n<i>` is 1 when write i applied. */
export function combine(writes: readonly CteWrite[]): { sql: string; params: unknown[] } {
  return {
    sql: `WITH ${writes.flatMap((w) => w.ctes).join(',\n')} SELECT ${writes.map((w, i) => `${w.applied} AS n${i}`).join(', ')}`,
    params: writes.flatMap((w) => w.params),
  }
}

const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value))

/** `col = ?` for each defined value: undefined keeps the column. */
function sets(values: Record<string, unknown>): { sql: string[]; params: unknown[] } {
  const defined = Object.entries(values).filter(([, v]) => v !== undefined)
  return { sql: defined.map(([col]) => `${col} = ?`), params: defined.map(([, v]) => v) }
}

/** INSERT of the global row, its branches (one `unnest`) and its history entries (`created`, then `first`'s). */
export function pgCreate(
  name: string,
  p: string,
  tx: NewTx,
  rows: InitialRows,
  token: bigint,
  now: number,
  nowSql: string,
): CteWrite {
  const lease = rows.leaseMs === undefined ? '0' : rows.leaseMs === 0 ? '0' : `${nowSql} + ?`
  const g = `${name}g`
  const ctes = [
    `${g} AS (INSERT INTO ${p}global (gid, kind, name, status, parked_from, input, deadline_at, error, fence, version,
        created_at, updated_at, lease_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ${lease})
        ON CONFLICT (gid) DO NOTHING RETURNING gid)`,
    `${name}b AS (INSERT INTO ${p}branch (gid, branch, op, seq, status, attempts, result, last_error, updated_at)
      SELECT ${g}.gid, x.branch, x.op, x.seq, x.status, x.attempts, x.result, x.last_error, ?::bigint
      FROM ${g}, unnest(?::text[], ?::text[], ?::int[], ?::text[], ?::int[], ?::text[], ?::text[])
        AS x(branch, op, seq, status, attempts, result, last_error))`,
    historyCte(name, p, g, rows.events.length),
  ]
  const params: unknown[] = [tx.gid, tx.kind, tx.name, rows.status, rows.parkedFrom, json(tx.input), tx.deadlineAt]
  params.push(rows.error, token, now, now)
  if (rows.leaseMs !== undefined && rows.leaseMs !== 0) params.push(rows.leaseMs)
  const column = <K extends keyof InitialRows['branches'][number]>(k: K) => rows.branches.map((b) => b[k])
  params.push(now, column('id'), column('op'), column('seq'), column('status'), column('attempts'))
  params.push(column('result'), column('lastError'))
  params.push(...historyParams(rows.events, token, now))
  return { ctes, params, applied: `(SELECT count(*) FROM ${g})::int` }
}

/** History entries in order: the rows are produced sorted by `ord`, so their serial ids follow it. */
function historyCte(name: string, p: string, g: string, count: number): string {
  const rows = Array.from({ length: count }, (_, i) => `(?::text, ?::text, ?::text, ?::text, ${i})`).join(', ')
  return `${name}h AS (INSERT INTO ${p}history (gid, branch, op, type, detail, fence, at)
    SELECT ${g}.gid, v.branch, v.op, v.type, v.detail, ?::bigint, ?::bigint
    FROM ${g}, (VALUES ${rows}) AS v(branch, op, type, detail, ord) ORDER BY v.ord)`
}

function historyParams(events: readonly HistoryEvent[], token: bigint, now: number): unknown[] {
  return [token, now, ...events.flatMap((e) => [e.branch ?? null, e.op ?? null, e.type, e.detail ?? null])]
}

/**
 * One fenced transition: the global row is updated only while `token` is the highest that wrote it and every
 * branch the change names exists (so a bad branch changes nothing, as a rolled-back transaction would); the
 * statement returns `n = 1` when it applied.
 */
export function pgWrite(
  name: string,
  p: string,
  gid: string,
  token: bigint,
  change: TxChange,
  now: number,
  nowSql: string,
): CteWrite {
  const gName = `${name}g`
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
    `${gName} AS (UPDATE ${p}global SET ${g.sql.join(', ')}, version = version + 1${lease} WHERE ${where} RETURNING gid)`,
  ]
  branches.forEach((b, i) => {
    const u = branchSets(b, now)
    parts.push(
      `${name}b${i} AS (UPDATE ${p}branch SET ${u.sql.join(', ')} WHERE gid = (SELECT gid FROM ${gName}) AND branch = ? AND op = ?)`,
    )
    params.push(...u.params, b.id, b.op)
  })
  const events = [...(change.earlier ?? []), change.event]
  parts.push(historyCte(name, p, gName, events.length))
  params.push(...historyParams(events, token, now))
  return { ctes: parts, params, applied: `(SELECT count(*) FROM ${gName})::int` }
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
