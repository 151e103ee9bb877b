import type { Xid } from './xid.js'

/** The slice of a mysql2/promise connection an XA branch uses. */
export interface MysqlXaConnection {
  query(sql: string, params?: unknown[]): Promise<[unknown, unknown]>
  release(): void
  destroy(): void
}

/** The slice of a mysql2/promise pool an XA branch uses (`mysql.createPool`). */
export interface MysqlXaPool {
  getConnection(): Promise<MysqlXaConnection>
}

/** The slice of a `pg` client an XA branch uses. */
export interface PgXaClient {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>
  release(destroy?: boolean | Error): void
}

/** The slice of a `pg` Pool an XA branch uses. */
export interface PgXaPool {
  connect(): Promise<PgXaClient>
}

/** A database an XA branch runs on: a mysql2/promise pool (MariaDB, MySQL) or a `pg` Pool (PostgreSQL). */
export type XaPool = MysqlXaPool | PgXaPool

/** One branch's dedicated connection, from `XA START` to the end of phase 2. */
export interface XaConnection {
  /** What the branch function receives: the mysql2 connection or the pg client. */
  readonly raw: unknown
  /** Opens the branch (`XA START` / `BEGIN`). */
  start(xid: Xid): Promise<void>
  /** Ends and prepares it (`XA END` + `XA PREPARE` / `PREPARE TRANSACTION`): phase 1 of this branch. */
  prepare(xid: Xid): Promise<void>
  /** Undoes a branch that was not prepared (its function failed, or the transaction aborts in phase 1). */
  rollbackActive(xid: Xid): Promise<void>
  /** Phase 2 on the same connection: `XA COMMIT` / `COMMIT PREPARED`, or the rollback of a prepared branch. */
  finish(xid: Xid, commit: boolean): Promise<void>
  /** Gives the connection back to the pool (`destroy`: close it, so the server ends whatever it still holds). */
  release(destroy: boolean): void
}

/** A database under XA, adapted to its dialect. */
export interface XaResource {
  readonly dialect: 'mysql' | 'postgres'
  /** `<dialect>:<host>:<port>/<database>` as the server reports them: how the log names the resource. */
  identity(): Promise<string>
  /** Throws `XaUnsupportedError` when the server cannot do two-phase commit as configured. Memoised. */
  check(): Promise<void>
  /** A dedicated connection for one branch. */
  open(): Promise<XaConnection>
  /** Our prepared (in-doubt) branches on this server. */
  recover(): Promise<Xid[]>
  /**
   * Commits or rolls back a prepared branch from a fresh connection (recovery). Resolves `true` when the branch
   * is finished: done now, or already done before (a repeated commit counts as done: the XID is no longer
   * prepared); `false` when it is still prepared but held by another session (asked again later).
   */
  settle(xid: Xid, commit: boolean): Promise<boolean>
}
