import { ALL_KINDS, BackendBase, defineCapabilities } from '../../backend/backend-base.js'
import { decideGrant, type HolderState, stateKey, type WaiterState } from '../../backend/grant-rules.js'
import type { ListRequest, LockInspection, LockSummary } from '../../backend/inspection.js'
import { LocalNotifier } from '../../backend/local-notifier.js'
import { requirePeer } from '../../backend/optional-peer.js'
import type {
  AcquireRequest,
  AcquireResult,
  BackendCapabilities,
  HolderRef,
  LockKind,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from '../../backend/types.js'
import { BackendUnavailableError } from '../../errors.js'
import { FileNotifier } from './file-notifier.js'
import { ADD_PERMITS, SCHEMA, SQL } from './schema.js'
import { SqliteInspector } from './sqlite-inspect.js'

/** The slice of a better-sqlite3 `Database` this backend uses. */
export interface SqliteDatabase {
  pragma(source: string): unknown
  exec(source: string): unknown
  prepare(source: string): SqliteStatement
  transaction<A extends unknown[], R>(fn: (...args: A) => R): { immediate(...args: A): R }
  close(): unknown
  readonly open: boolean
}

export interface SqliteStatement {
  run(...params: unknown[]): { changes: number }
  get(...params: unknown[]): unknown
  all(...params: unknown[]): unknown[]
  safeIntegers(on?: boolean): SqliteStatement
}

/** Options of {@link sqliteBackend}: a file path (opened and closed by the backend) or an open database. */
export type SqliteBackendOptions = (
  | { path: string; database?: undefined }
  | { database: SqliteDatabase; path?: undefined }
) & {
  /**
   * SQLite's `synchronous` pragma (WAL mode). `normal` (default) loses no commit when a process crashes, which is
   * what a single-host lock needs: a power loss or kernel crash kills every local holder along with the unsynced
   * commits. Choose `full` when tokens fence a resource on another machine that must never see a token twice
   * after a power loss; it costs an fsync per acquire and release (about 20x slower here).
   */
  synchronous?: 'full' | 'normal'
  /** How long a statement waits for another process's write transaction. Default 5 000. */
  busyTimeoutMs?: number
}

const CAPABILITIES = defineCapabilities({
  fencing: 'native',
  notifications: 'global',
  kinds: ALL_KINDS,
  lockDelay: true,
  clock: 'host',
  waiters: 'queued',
  inspect: true,
  list: true,
})

/** Grants between two sweeps of abandoned rows. */
const SWEEP_EVERY = 1_000

type Statements = { [K in keyof typeof SQL]: SqliteStatement }

/**
 * Locks in a SQLite file (WAL mode) shared by every process on this host. Each primitive is one
 * `BEGIN IMMEDIATE` transaction; leases are timed by the host clock, which all local processes share.
 */
export class SqliteBackend extends BackendBase {
  readonly name = 'sqlite'
  override readonly capabilities: BackendCapabilities
  private readonly db: SqliteDatabase
  private readonly ownsDatabase: boolean
  private readonly st: Statements
  private readonly notifier = new LocalNotifier()
  private readonly files: FileNotifier | undefined
  private grantsSinceSweep = 0
  private readonly acquireTx: (request: AcquireRequest, now: number) => AcquireResult
  private readonly inspector: SqliteInspector

  constructor(options: SqliteBackendOptions) {
    super()
    this.ownsDatabase = options.database === undefined
    this.db = options.database ?? openDatabase(options.path as string)
    this.db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5_000)}`)
    this.db.pragma('journal_mode = WAL')
    this.db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`)
    this.db
      .transaction(() => {
        this.db.exec(SCHEMA)
        const columns = this.db.prepare('PRAGMA table_info(latchkey_holders)').all() as { name: string }[]
        if (!columns.some((c) => c.name === 'permits')) this.db.exec(ADD_PERMITS)
      })
      .immediate()
    this.st = Object.fromEntries(Object.entries(SQL).map(([k, sql]) => [k, this.db.prepare(sql)])) as Statements
    this.st.holders.safeIntegers(true)
    this.st.nextFence.safeIntegers(true)
    const tx = this.db.transaction((request: AcquireRequest, now: number) => this.acquireIn(request, now))
    this.acquireTx = (request, now) => tx.immediate(request, now)
    this.inspector = new SqliteInspector(this.db)
    // Other processes learn of releases through a watched directory; without one they poll.
    this.files = options.path === undefined ? undefined : FileNotifier.start(options.path, this.notifier)
    this.capabilities = this.files === undefined ? { ...CAPABILITIES, notifications: 'process' } : CAPABILITIES
  }

  async tryAcquire(request: AcquireRequest): Promise<AcquireResult> {
    return this.run(() => this.acquireTx(request, Date.now()))
  }

  async renew(request: RenewRequest): Promise<boolean> {
    const now = Date.now()
    const expiresAt = now + request.ttlMs
    return this.run(() => this.st.renew.run(expiresAt, expiresAt, stateKey(request), request.owner, now).changes === 1)
  }

  async release(request: HolderRef): Promise<boolean> {
    const key = stateKey(request)
    const released = this.run(() => this.st.release.run(key, request.owner, Date.now()).changes === 1)
    if (released) this.announce(key)
    return released
  }

  override async leaveQueue(request: HolderRef): Promise<void> {
    const key = stateKey(request)
    if (this.run(() => this.st.deleteWaiter.run(key, request.owner).changes) > 0) this.announce(key)
  }

  async isLocked(ref: LockRef & { permits: number }): Promise<boolean> {
    const row = this.run(() => this.st.countLive.get(stateKey(ref), Date.now()) as { n: number })
    return ref.kind === 'semaphore' ? row.n >= ref.permits : row.n > 0
  }

  /** Rows of live holders and of waiters in line; SQLite keeps no waiting start time. */
  override async inspect(key: string): Promise<LockInspection> {
    return this.run(() => this.inspector.inspect(key))
  }

  override async list(request: ListRequest): Promise<LockSummary[]> {
    return this.run(() => this.inspector.list(request))
  }

  async forceRelease(ref: LockRef): Promise<boolean> {
    const key = stateKey(ref)
    const dropped = this.run(() => {
      const tx = this.db.transaction(() => {
        this.st.dropWaiters.run(key)
        return this.st.dropHolders.run(key).changes
      })
      return tx.immediate()
    })
    this.announce(key, true)
    return dropped > 0
  }

  subscribe(ref: LockRef): ReleaseSubscription {
    return this.notifier.subscribe(stateKey(ref), ref.kind)
  }

  override async close(): Promise<void> {
    this.files?.close()
    if (this.ownsDatabase && this.db.open) this.db.close()
  }

  private announce(key: string, all = false): void {
    this.notifier.notify(key, all)
    this.files?.announce(key)
  }

  /** The body of the acquire transaction: prune, decide with the shared grant rules, write. */
  private acquireIn(request: AcquireRequest, now: number): AcquireResult {
    const key = stateKey(request)
    const { st } = this
    st.pruneHolders.run(key, now)
    st.pruneWaiters.run(key, now)
    const holders = (st.holders.all(key) as RawHolder[]).map(toHolder)
    const waiters = st.waiters.all(key) as WaiterState[]
    const decision = decideGrant(request, holders, waiters, now)
    if (!decision.grant) {
      if (request.queue) {
        const existing = st.findWaiter.get(key, request.owner) as { seq: number } | undefined
        const seq = existing?.seq ?? (st.nextSeq.get() as { value: number }).value
        st.upsertWaiter.run(key, request.owner, request.kind, seq, now + request.queueTtlMs)
      }
      return { acquired: false, retryAfterMs: decision.retryAfterMs, permitsInForce: decision.permitsInForce }
    }
    const token = (st.nextFence.get() as { value: bigint }).value
    const expiresAt = now + request.ttlMs
    const permits = request.kind === 'semaphore' ? request.permits : 0
    st.insertHolder.run(key, request.owner, request.kind, expiresAt, expiresAt + request.lockDelayMs, token, permits)
    st.deleteWaiter.run(key, request.owner)
    // Now and then, drop rows of locks that expired unreleased and were never looked at again.
    if (++this.grantsSinceSweep >= SWEEP_EVERY) {
      this.grantsSinceSweep = 0
      st.sweepHolders.run(now)
      st.sweepWaiters.run(now)
    }
    return { acquired: true, token }
  }

  /** The database file (better-sqlite3's `name`), as messages name it. */
  private file(): string {
    const name = (this.db as { name?: unknown }).name
    return typeof name === 'string' ? JSON.stringify(name) : 'the database handed in'
  }

  /** Runs a statement, mapping "database busy / locked / I/O" to a retryable `BackendUnavailableError`. */
  private run<T>(fn: () => T): T {
    try {
      return fn()
    } catch (error) {
      const code = (error as { code?: unknown }).code
      if (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL)/.test(code)) {
        throw new BackendUnavailableError(`sqlite backend at ${this.file()}: ${(error as Error).message}; try again`, {
          cause: error,
        })
      }
      if (!this.db.open) {
        throw new BackendUnavailableError(`sqlite backend at ${this.file()}: the database is closed`, { cause: error })
      }
      throw error
    }
  }
}

interface RawHolder {
  owner: string
  kind: LockKind
  expiresAt: bigint
  delayUntil: bigint
  token: bigint
  permits: bigint
}

function toHolder(row: RawHolder): HolderState {
  return {
    ...row,
    expiresAt: Number(row.expiresAt),
    delayUntil: Number(row.delayUntil),
    permits: Number(row.permits),
  }
}

function openDatabase(path: string): SqliteDatabase {
  const Database = requirePeer<new (path: string) => SqliteDatabase>(
    'better-sqlite3',
    'sqlite',
    'better-sqlite3 package (12.x): npm install better-sqlite3@12',
  )
  return new Database(path)
}
