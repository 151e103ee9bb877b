/**
 * The SQLite backend's operator reads: a lock's holder and waiter rows, and the keys in use. Read-only
 * statements outside any write transaction (WAL readers never wait for the writer).
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
import type { SqliteDatabase, SqliteStatement } from './sqlite-backend.js'

const HOLDERS =
  'SELECT owner, kind, expires_at AS expiresAt, token, permits FROM latchkey_holders WHERE lock_key IN (?, ?) AND delay_until > ?'
const WAITERS = 'SELECT owner, kind, seq FROM latchkey_waiters WHERE lock_key IN (?, ?) AND expires_at > ?'
// substr counts characters of TEXT, as `length` does, so this is "starts with" for any prefix.
const KEYS = `SELECT lock_key AS k FROM latchkey_holders WHERE substr(lock_key, 1, length(@p)) = @p AND delay_until > @now
  UNION SELECT lock_key FROM latchkey_waiters WHERE substr(lock_key, 1, length(@p)) = @p AND expires_at > @now`

/** Prepared once per backend. */
export class SqliteInspector {
  private readonly holders: SqliteStatement
  private readonly waiters: SqliteStatement
  private readonly keys: SqliteStatement

  constructor(db: SqliteDatabase) {
    this.holders = db.prepare(HOLDERS).safeIntegers(true)
    this.waiters = db.prepare(WAITERS)
    this.keys = db.prepare(KEYS)
  }

  /** The live holders and the waiters in line (fair locks, waiting writers) of `key`, family and semaphore. */
  inspect(key: string): LockInspection {
    const keys = [key, stateKey({ key, kind: 'semaphore' })]
    const now = Date.now()
    const holders = this.holders.all(...keys, now) as HolderRow[]
    const waiters = this.waiters.all(...keys, now) as WaiterRow[]
    return inspection(key, holders.map(holderFromRow), waitersFromRows(waiters))
  }

  /** The keys held or waited on that start with `request.prefix`. */
  list(request: ListRequest): Promise<LockSummary[]> {
    const rows = this.keys.all({ p: request.prefix, now: Date.now() }) as { k: string }[]
    return summariesOf(
      lockKeysOf(
        rows.map((r) => r.k),
        request,
      ),
      request.limit,
      async (key) => this.inspect(key),
    )
  }
}
