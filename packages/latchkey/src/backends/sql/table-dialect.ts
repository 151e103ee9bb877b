/**
 * What one database brings to the SQL `'table'` strategy ({@link SqlTableBackend}): its statements, how it
 * encodes a lock key, how it opens a READ COMMITTED transaction, which driver errors kill a connection, its
 * migration and how releases reach waiters. Everything else (the order statements run in, the grant rules, the
 * retry after a missing lock row) is the backend's, written once.
 */
import type { BackendCapabilities, LockKind, ReleaseSubscription } from '../../backend/types.js'

/** A statement's rows, and how many rows it matched (an UPDATE or DELETE) or returned (a SELECT). */
export interface SqlResult<R> {
  readonly rows: R[]
  readonly count: number
}

/** One connection, already taken from the pool. */
export interface SqlSession {
  run<R = Record<string, unknown>>(sql: string, values: readonly unknown[]): Promise<SqlResult<R>>
}

/** The pool: one statement in autocommit, or several on one connection (driver errors mapped by the pool). */
export interface SqlPool extends SqlSession {
  with<T>(fn: (session: SqlSession) => Promise<T>): Promise<T>
}

/**
 * The `'table'` statements. Parameters come in the same order in every dialect, so the backend passes one
 * list of values to either; the dialect writes `?` or `$n`. A key is always `encodeKey(key)`, owners are
 * text, `notifyArgs` stands for the values {@link TableNotifier.args} appends.
 */
export interface TableStatements {
  /** (key): creates the lock's serialisation row if it is missing; takes no lock that outlives it. */
  readonly ensureKey: string
  /** (key): `fence`, `seq`, `now` of the lock row, locked. */
  readonly lockKey: string
  /** (key): `owner, kind, expiresAt, delayUntil, token, permits, now` of every holder row, locked. */
  readonly holders: string
  /** (key): `owner, kind, seq, expiresAt` of every waiter row, locked. */
  readonly waiters: string
  /** (key, owners[]). */
  readonly deleteHolders: string
  /** (key, owners[]). */
  readonly deleteWaiters: string
  /** (key, owner, kind, expiresAt, delayUntil, token, permits). */
  readonly insertHolder: string
  /** (key, owner, kind, seq, expiresAt): a second call only moves `expiresAt`. */
  readonly upsertWaiter: string
  /** (fence, seq, key). */
  readonly saveCounters: string
  /** (ttlMs, ttlMs, key, owner): matches one row while the lease is live. */
  readonly renew: string
  /** (key, owner, ...notifyArgs): deletes a live holder row. */
  readonly release: string
  /** (key, owner, ...notifyArgs): deletes a waiter row. */
  readonly leave: string
  /** (owner, key): `n, firstFree, lastFree, mine, now, permits` of the occupying holders, read without locks. */
  readonly summary: string
  /** (key): `n`, the holders still occupying a slot. */
  readonly countLive: string
  /** (key). */
  readonly dropHolders: string
  /** (key). */
  readonly dropWaiters: string
  /** (...notifyArgs): announces a forced release inside its transaction; none where the notifier wakes locally. */
  readonly notify?: string
}

/** How a release reaches the waiters: PostgreSQL's `NOTIFY` to every process, or a wake-up in this one. */
export interface TableNotifier {
  /** Values the release, leave and notify statements take after their own (PostgreSQL: channel and payload). */
  args(key: string): readonly unknown[]
  /** Called after a release, leave or forced release changed rows (a no-op where the statement announced it). */
  changed(key: string): void
  subscribe(key: string, kind: LockKind): ReleaseSubscription
  /** Stops listening; the pool is not the notifier's to close. */
  close(): Promise<void>
}

/** One database's part of the `'table'` strategy. */
export interface TableDialect {
  readonly name: string
  readonly capabilities: BackendCapabilities
  readonly pool: SqlPool
  readonly sql: TableStatements
  readonly notifier: TableNotifier
  /** How a key is bound: MySQL binds the string (its VARBINARY column keeps the UTF-8 bytes), PostgreSQL a Buffer (BYTEA). */
  encodeKey(key: string): unknown
  /** The statements that open a READ COMMITTED transaction, whatever the server's default level. */
  readonly begin: readonly string[]
  /** Whether a driver error means the connection it happened on is unusable (then no ROLLBACK is sent). */
  isFatal(error: unknown): boolean
  /**
   * Whether a missing lock row may be created inside the acquire transaction. PostgreSQL's `ON CONFLICT DO
   * NOTHING` keeps no lock after a conflict; InnoDB's `INSERT IGNORE` keeps a shared lock on the duplicate
   * that two inserters then both try to upgrade (a deadlock), so MySQL creates it in autocommit, before.
   */
  readonly ensureKeyInTransaction: boolean
  /**
   * Creates the tables and adds later columns, safe to race with other processes doing the same; `transaction`
   * runs `fn` as one READ COMMITTED transaction, for a dialect that must serialise its DDL.
   */
  migrate(transaction: <T>(fn: (session: SqlSession) => Promise<T>) => Promise<T>): Promise<void>
}
