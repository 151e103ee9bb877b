import { type HolderState, stateKey, type WaiterState } from '../../backend/grant-rules.js'
import { LocalNotifier } from '../../backend/local-notifier.js'
import type {
  AcquireRequest,
  AcquireResult,
  Backend,
  BackendCapabilities,
  HolderRef,
  LockKind,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from '../../backend/types.js'
import {
  acquireInTable,
  type LiveSummary,
  type LockCounters,
  precheckBusy,
  type TableTx,
} from '../sql/sql-table-grant.js'
import { isFatal, type MysqlConnection, type MysqlResultHeader, type MysqlRunner, matchedRows } from './mysql-client.js'
import { MYSQL_ADD_PERMITS, MYSQL_HAS_PERMITS, MYSQL_MIGRATION_STATEMENTS, TABLE_SQL as SQL } from './mysql-schema.js'

const CAPABILITIES: BackendCapabilities = Object.freeze({
  fencing: 'native',
  notifications: 'process',
  kinds: Object.freeze(['mutex', 'fair', 'read', 'write', 'semaphore'] as const),
  crossProcess: true,
  lockDelay: true,
  clock: 'server',
})

/** Thrown inside the acquire transaction when the lock's `latchkey_locks` row does not exist yet. */
class MissingLockRow extends Error {}

/**
 * The `'table'` strategy: holder and waiter rows, leases timed by the database clock, a per-lock fencing
 * counter that never goes back, every kind of lock. See {@link acquireInTable} for the transaction.
 *
 * Why it cannot deadlock (note 000's analysis of InnoDB locks, hedengcheng's "组合一..八"): every statement
 * finds its rows by primary key (or by the `lock_key` prefix of the primary key) and runs under
 * READ COMMITTED, set for each transaction. Under READ COMMITTED a PK lookup locks only the records it
 * returns ("组合一": id 主键 + RC, X lock on that record only); gap and next-key locks, which REPEATABLE
 * READ takes on a range scan or on a miss (note 000's "未找到满足条件的记录，则对第一个不满足条件的记录加 Gap
 * 锁", the gap that two concurrent inserts then deadlock on), are not taken. A missing lock row is created
 * by an autocommit `INSERT IGNORE` before the transaction, never inside it, so no transaction holds a
 * shared duplicate-key lock that it later tries to upgrade (the classic three-inserter deadlock). The
 * remaining row locks are always taken in one order (lock row, holders, waiters), so no cycle can form.
 * Needs `binlog_format` ROW or MIXED if binary logging is on (InnoDB refuses READ COMMITTED with STATEMENT).
 */
export class MysqlTableBackend implements Backend {
  readonly name = 'mysql'
  readonly capabilities = CAPABILITIES
  private readonly notifier = new LocalNotifier()
  private migrated: Promise<void> | undefined

  constructor(private readonly db: MysqlRunner) {}

  async tryAcquire(request: AcquireRequest): Promise<AcquireResult> {
    await this.migrate()
    const key = stateKey(request)
    if (request.kind === 'mutex' || request.kind === 'semaphore') {
      const busy = precheckBusy(request, await this.summary(key, request.owner))
      if (busy !== undefined) return busy
    }
    try {
      return await this.transaction((c) => acquireInTable(mysqlTx(c), request, key))
    } catch (error) {
      if (!(error instanceof MissingLockRow)) throw error
    }
    await this.db.query(SQL.ensureKey, [key])
    return this.transaction((c) => acquireInTable(mysqlTx(c), request, key))
  }

  async renew(request: RenewRequest): Promise<boolean> {
    await this.migrate()
    const ttl = Math.ceil(request.ttlMs)
    const header = await this.db.query<MysqlResultHeader>(SQL.renew, [ttl, ttl, stateKey(request), request.owner])
    return matchedRows(header) === 1
  }

  async release(request: HolderRef): Promise<boolean> {
    await this.migrate()
    const key = stateKey(request)
    const header = await this.db.query<MysqlResultHeader>(SQL.release, [key, request.owner])
    if (header.affectedRows !== 1) return false
    this.notifier.notify(key)
    return true
  }

  async leaveQueue(request: HolderRef): Promise<void> {
    await this.migrate()
    const key = stateKey(request)
    const header = await this.db.query<MysqlResultHeader>(SQL.leave, [key, request.owner])
    if (header.affectedRows > 0) this.notifier.notify(key)
  }

  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    await this.migrate()
    const rows = await this.db.query<{ n: number | string }[]>(SQL.countLive, [stateKey(ref)])
    const n = Number(rows[0]?.n ?? 0)
    return ref.kind === 'semaphore' ? n >= ref.permits : n > 0
  }

  async forceRelease(ref: LockRef): Promise<boolean> {
    await this.migrate()
    const key = stateKey(ref)
    // Same lock order as an acquire: the lock row first (when there is none, nothing was ever held).
    const dropped = await this.transaction(async (c) => {
      const [rows] = await c.query(SQL.lockKey, [key])
      if ((rows as unknown[]).length === 0) return 0
      await c.query(SQL.dropWaiters, [key])
      const [header] = await c.query(SQL.dropHolders, [key])
      return (header as MysqlResultHeader).affectedRows
    })
    this.notifier.notify(key)
    return dropped > 0
  }

  subscribe(ref: LockRef): ReleaseSubscription {
    return this.notifier.subscribe(stateKey(ref), ref.kind)
  }

  async close(): Promise<void> {
    // Nothing is pinned between calls; the pool belongs to the application.
  }

  private async summary(key: string, owner: string): Promise<LiveSummary> {
    const rows = await this.db.query<Record<keyof LiveSummary, number | string>[]>(SQL.summary, [owner, key])
    const r = rows[0]
    const num = (v: number | string | undefined): number => Number(v ?? 0)
    return {
      n: num(r?.n),
      firstFree: num(r?.firstFree),
      lastFree: num(r?.lastFree),
      mine: num(r?.mine) > 0,
      now: num(r?.now),
      permits: num(r?.permits),
    }
  }

  /** Creates the tables once per backend (CREATE TABLE IF NOT EXISTS is safe to race) and adds `permits` if missing. */
  private migrate(): Promise<void> {
    this.migrated ??= this.db
      .with(async (c) => {
        for (const statement of MYSQL_MIGRATION_STATEMENTS) await c.query(statement)
        const [rows] = await c.query(MYSQL_HAS_PERMITS)
        if (Number((rows as { n: number | string }[])[0]?.n ?? 0) > 0) return
        // A concurrent backend may add it first: its "duplicate column" (ER_DUP_FIELDNAME) is success here.
        await c.query(MYSQL_ADD_PERMITS).catch((error: unknown) => {
          if ((error as { errno?: unknown }).errno !== 1060) throw error
        })
      })
      .catch((error: unknown) => {
        this.migrated = undefined
        throw error
      })
    return this.migrated
  }

  /** Runs `fn` in one READ COMMITTED transaction on one pool connection. */
  private transaction<T>(fn: (c: MysqlConnection) => Promise<T>): Promise<T> {
    return this.db.with(async (c) => {
      // Applies to the next transaction only, so the pool connection's own session level is untouched.
      await c.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED')
      await c.query('START TRANSACTION')
      try {
        const result = await fn(c)
        await c.query('COMMIT')
        return result
      } catch (error) {
        if (!isFatal(error)) await c.query('ROLLBACK')
        throw error
      }
    })
  }
}

interface RawHolder {
  owner: string
  kind: LockKind
  expiresAt: number | string
  delayUntil: number | string
  token: string
  permits: string
  now: number | string
}

/** The MySQL statements of one acquire transaction. */
function mysqlTx(c: MysqlConnection): TableTx {
  let lockNow = 0
  const run = async <T>(sql: string, values: unknown[]): Promise<T> => (await c.query(sql, values))[0] as T
  return {
    async lockKey(key: string): Promise<LockCounters> {
      const rows = await run<{ fence: string; seq: number | string; now: number | string }[]>(SQL.lockKey, [key])
      const row = rows[0]
      if (row === undefined) throw new MissingLockRow()
      lockNow = Number(row.now)
      return { fence: BigInt(row.fence), seq: Number(row.seq) }
    },
    async holders(key: string) {
      const rows = await run<RawHolder[]>(SQL.holders, [key])
      const now = Math.max(lockNow, ...rows.map((r) => Number(r.now)))
      const holders: HolderState[] = rows.map((r) => ({
        owner: r.owner,
        kind: r.kind,
        expiresAt: Number(r.expiresAt),
        delayUntil: Number(r.delayUntil),
        token: BigInt(r.token),
        permits: Number(r.permits),
      }))
      return { now, holders }
    },
    async waiters(key: string) {
      const rows = await run<(WaiterState & { seq: number | string; expiresAt: number | string })[]>(SQL.waiters, [key])
      return rows.map((w) => ({ ...w, seq: Number(w.seq), expiresAt: Number(w.expiresAt) }))
    },
    async deleteHolders(key, owners) {
      await run(SQL.deleteHolders, [key, owners])
    },
    async deleteWaiters(key, owners) {
      await run(SQL.deleteWaiters, [key, owners])
    },
    async insertHolder(key, h) {
      await run(SQL.insertHolder, [key, h.owner, h.kind, h.expiresAt, h.delayUntil, h.token.toString(), h.permits ?? 0])
    },
    async upsertWaiter(key, w) {
      await run(SQL.upsertWaiter, [key, w.owner, w.kind, w.seq, w.expiresAt])
    },
    async saveCounters(key, counters) {
      await run(SQL.saveCounters, [counters.fence.toString(), counters.seq, key])
    },
  }
}
