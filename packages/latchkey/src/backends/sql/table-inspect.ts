/**
 * The `'table'` strategy's operator reads: a lock's live holder rows and its waiter rows (fair waiters and
 * waiting writers keep a row; other waiters poll and keep none), and the keys in use. Autocommit reads that lock
 * nothing, so inspecting never delays an acquire.
 */
import { stateKey } from '../../backend/grant-rules.js'
import {
  type HolderRow,
  holderFromRow,
  inspection,
  type ListRequest,
  type LockInspection,
  type LockSummary,
  lockKeysOf,
  summariesOf,
  type WaiterRow,
  waitersFromRows,
} from '../../backend/inspection.js'
import type { SqlPool } from './table-dialect.js'

/** A dialect's operator statements; the database clock decides what is live. */
export interface InspectStatements {
  /** (key, semaphore key): `owner, kind, expiresAt, token, permits` of the holders still occupying a slot. */
  readonly holders: string
  /** (key, semaphore key): `owner, kind, seq` of the waiters whose place has not expired. */
  readonly waiters: string
  /** (prefix, repeated `keysArity` times): `k`, the keys of live holders and waiters starting with prefix. */
  readonly keys: string
  readonly keysArity: number
}

/** What the reads need of the dialect. */
export interface InspectDeps {
  readonly pool: SqlPool
  readonly statements: InspectStatements
  encodeKey(key: string): unknown
}

/** The holders and waiters of `key`, family and semaphore. */
export async function inspectTable(d: InspectDeps, key: string): Promise<LockInspection> {
  const keys = [d.encodeKey(key), d.encodeKey(stateKey({ key, kind: 'semaphore' }))]
  const [holders, waiters] = await Promise.all([
    d.pool.run<HolderRow>(d.statements.holders, keys),
    d.pool.run<WaiterRow>(d.statements.waiters, keys),
  ])
  return inspection(key, holders.rows.map(holderFromRow), waitersFromRows(waiters.rows))
}

/** The locks held or waited on whose key starts with `request.prefix`. */
export async function listTable(d: InspectDeps, request: ListRequest): Promise<LockSummary[]> {
  const prefix = d.encodeKey(request.prefix)
  const { rows } = await d.pool.run<{ k: Buffer | string }>(
    d.statements.keys,
    Array.from({ length: d.statements.keysArity }, () => prefix),
  )
  const keys = lockKeysOf(
    rows.map((r) => (Buffer.isBuffer(r.k) ? r.k.toString('utf8') : String(r.k))),
    request,
  )
  return summariesOf(keys, request.limit, (key) => inspectTable(d, key))
}
