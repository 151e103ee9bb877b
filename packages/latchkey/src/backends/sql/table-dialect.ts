/**
 * What one database brings to the SQL `'table'` strategy ({@link SqlTableBackend}): its statements, how it
 * encodes a lock key, how it opens a READ COMMITTED transaction, which driver errors kill a connection, its
 * migration and how releases reach waiters. Everything else (the order statements run in, the grant rules, the
 * retry after a missing lock row) is the backend's, written once.
 */
import type { BackendCapabilities, LockKind, ReleaseSubscription } from '../../backend/types.js'
import type { InspectStatements } from './table-inspect.js'
import type { TableStatements } from './table-statements.js'

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

/** How a release reaches the waiters: PostgreSQL's `NOTIFY` to every process, or a wake-up in this one. */
export interface TableNotifier {
  /** Values the release, leave and notify statements take after their own (PostgreSQL: channel and payload). */
  args(key: string): readonly unknown[]
  /** Called after a release, leave or forced release changed rows (a no-op where the statement announced it). */
  changed(key: string): void
  subscribe(key: string, kind: LockKind): ReleaseSubscription
  /**
   * Optional: true when a try of `key` may skip the read that tells a taken lock without a transaction, because
   * the notifier woke it for a slot it has just seen free (the read would repeat it).
   */
  sawFree?(key: string): boolean
  /** Stops listening; the pool is not the notifier's to close. */
  close(): Promise<void>
}

/** One database's part of the `'table'` strategy. */
export interface TableDialect {
  readonly name: string
  /** `'global'` when the notifier reaches every process, `'process'` when other processes poll. */
  readonly notifications: BackendCapabilities['notifications']
  readonly pool: SqlPool
  readonly sql: TableStatements
  /** The operator reads (`inspect`, `list`); without them the backend cannot inspect. */
  readonly inspect?: InspectStatements
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
