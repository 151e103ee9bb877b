import { ALL_KINDS, BackendBase, defineCapabilities } from '../../backend/backend-base.js'
import { stateKey } from '../../backend/grant-rules.js'
import type { ListRequest, LockInspection, LockSummary } from '../../backend/inspection.js'
import type {
  AcquireRequest,
  AcquireResult,
  BackendCapabilities,
  CallOptions,
  HolderRef,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from '../../backend/types.js'
import { UnsupportedError } from '../../errors.js'
import { KeyGate } from './key-gate.js'
import { acquireInTable, precheckBusy, readLiveSummary } from './sql-table-grant.js'
import { MissingLockRow, tableTx } from './sql-table-tx.js'
import type { SqlSession, TableDialect } from './table-dialect.js'
import { type InspectDeps, inspectTable, listTable } from './table-inspect.js'

/**
 * The `'table'` strategy on any SQL database with row locks and READ COMMITTED: holder and waiter rows,
 * leases timed by the database clock, a per-lock fencing counter that never goes back, every kind of lock.
 * The database's own part (statements, key encoding, how releases are announced) is its {@link TableDialect};
 * the acquire transaction is {@link acquireInTable}, whose fixed lock order keeps it free of deadlocks.
 *
 * Renew, release and leave are single autocommit statements on one row, so they wait for nothing but that row.
 */
export class SqlTableBackend extends BackendBase {
  readonly name: string
  override readonly capabilities: BackendCapabilities
  private migrated: Promise<void> | undefined
  /** One acquire transaction per lock at a time from this process (see KeyGate). */
  private readonly gate = new KeyGate()

  constructor(private readonly dialect: TableDialect) {
    super()
    this.name = dialect.name
    // Leases are timed by the database clock (the default), read in the same statements that write them.
    this.capabilities = defineCapabilities({
      fencing: 'native',
      notifications: dialect.notifications,
      // Rows can express every kind of lock the grant rules know.
      kinds: ALL_KINDS,
      lockDelay: true,
      // Fair waiters and waiting writers keep a row; the others poll and keep none.
      waiters: dialect.inspect === undefined ? 'none' : 'queued',
      inspect: dialect.inspect !== undefined,
      list: dialect.inspect !== undefined,
    })
  }

  /**
   * Honours `options.signal` between its statements: a try the core has abandoned at its deadline starts no
   * further transaction (whose grant the core would only release again).
   */
  override async tryAcquire(request: AcquireRequest, options?: CallOptions): Promise<AcquireResult> {
    await this.migrate()
    const key = stateKey(request)
    const prechecked = request.kind === 'mutex' || request.kind === 'semaphore'
    if (prechecked && this.dialect.notifier.sawFree?.(key) !== true) {
      const busy = await this.precheck(request, key)
      if (busy !== undefined) return busy
    }
    return this.gate.run(key, async (queued) => {
      // Behind another try of this process: it has probably taken the lock, which a plain read tells.
      if (queued && prechecked) {
        const busy = await this.precheck(request, key)
        if (busy !== undefined) return busy
      }
      const acquire = () => {
        options?.signal?.throwIfAborted()
        return this.transaction((s) => acquireInTable(tableTx(this.dialect, s), request, key))
      }
      try {
        return await acquire()
      } catch (error) {
        if (!(error instanceof MissingLockRow)) throw error
      }
      // Created in autocommit, outside any transaction (see TableDialect.ensureKeyInTransaction), then tried again.
      await this.dialect.pool.run(this.dialect.sql.ensureKey, [this.dialect.encodeKey(key)])
      return acquire()
    })
  }

  async renew(request: RenewRequest): Promise<boolean> {
    await this.migrate()
    const ttl = Math.ceil(request.ttlMs)
    const { count } = await this.dialect.pool.run(this.dialect.sql.renew, [ttl, ttl, ...this.holder(request)])
    return count === 1
  }

  async release(request: HolderRef): Promise<boolean> {
    await this.migrate()
    const key = stateKey(request)
    const args = [...this.holder(request), ...this.dialect.notifier.args(key)]
    if ((await this.dialect.pool.run(this.dialect.sql.release, args)).count !== 1) return false
    this.dialect.notifier.changed(key)
    return true
  }

  override async leaveQueue(request: HolderRef): Promise<void> {
    await this.migrate()
    const key = stateKey(request)
    const args = [...this.holder(request), ...this.dialect.notifier.args(key)]
    if ((await this.dialect.pool.run(this.dialect.sql.leave, args)).count > 0) this.dialect.notifier.changed(key)
  }

  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    await this.migrate()
    const { rows } = await this.dialect.pool.run<{ n: number | string }>(this.dialect.sql.countLive, [
      this.dialect.encodeKey(stateKey(ref)),
    ])
    const n = Number(rows[0]?.n ?? 0)
    return ref.kind === 'semaphore' ? n >= ref.permits : n > 0
  }

  async forceRelease(ref: LockRef): Promise<boolean> {
    await this.migrate()
    const key = stateKey(ref)
    const k = this.dialect.encodeKey(key)
    const { sql, notifier } = this.dialect
    const dropped = await this.transaction(async (s) => {
      // Same lock order as an acquire: the lock row first (when there is none, nothing was ever held).
      if ((await s.run(sql.lockKey, [k])).rows.length === 0) return 0
      await s.run(sql.dropWaiters, [k])
      const { count } = await s.run(sql.dropHolders, [k])
      if (sql.notify !== undefined) await s.run(sql.notify, notifier.args(key))
      return count
    })
    notifier.changed(key)
    return dropped > 0
  }

  /** Live holder rows and waiter rows (no waiting start time is stored), read in autocommit. */
  override async inspect(key: string): Promise<LockInspection> {
    await this.migrate()
    return inspectTable(this.inspectDeps(), key)
  }

  override async list(request: ListRequest): Promise<LockSummary[]> {
    await this.migrate()
    return listTable(this.inspectDeps(), request)
  }

  private inspectDeps(): InspectDeps {
    const statements = this.dialect.inspect
    if (statements === undefined) {
      throw new UnsupportedError(
        `The ${this.name} backend cannot inspect locks (its dialect has no inspect statements)`,
      )
    }
    return { pool: this.dialect.pool, statements, encodeKey: (key) => this.dialect.encodeKey(key) }
  }

  subscribe(ref: LockRef): ReleaseSubscription {
    return this.dialect.notifier.subscribe(stateKey(ref), ref.kind)
  }

  /** Stops the notifier (PostgreSQL's listening client is destroyed, not returned); the pool stays open. */
  override async close(): Promise<void> {
    await this.dialect.notifier.close()
  }

  /** The key and owner values of a holder or waiter row. */
  private holder(request: HolderRef): unknown[] {
    return [this.dialect.encodeKey(stateKey(request)), request.owner]
  }

  /** "Held" from a plain read, without a transaction (mutex and semaphore requests); undefined to go on. */
  private async precheck(request: AcquireRequest, key: string): Promise<AcquireResult | undefined> {
    const { pool, sql } = this.dialect
    return precheckBusy(request, await readLiveSummary(pool, sql.summary, this.dialect.encodeKey(key), request.owner))
  }

  /** The dialect's migration, once per backend; a failed one is tried again by the next call. */
  private migrate(): Promise<void> {
    this.migrated ??= this.dialect
      .migrate((fn) => this.transaction(fn))
      .catch((error: unknown) => {
        this.migrated = undefined
        throw error
      })
    return this.migrated
  }

  /** Runs `fn` in one READ COMMITTED transaction on one pool connection. */
  private transaction<T>(fn: (session: SqlSession) => Promise<T>): Promise<T> {
    const { pool, begin, isFatal } = this.dialect
    return pool.with(async (s) => {
      for (const statement of begin) await s.run(statement, [])
      try {
        const result = await fn(s)
        await s.run('COMMIT', [])
        return result
      } catch (error) {
        // A dead connection cannot roll back; the server does when the connection goes.
        if (!isFatal(error)) await s.run('ROLLBACK', [])
        throw error
      }
    })
  }
}
