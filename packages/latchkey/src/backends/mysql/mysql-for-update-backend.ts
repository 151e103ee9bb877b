import { defineCapabilities } from '../../backend/backend-base.js'
import { stateKey } from '../../backend/grant-rules.js'
import type { AcquireRequest, LockRef } from '../../backend/types.js'
import type { SessionHold } from '../sql/session-hold.js'
import type { ServerLockState } from '../sql/session-inspect.js'
import type { MysqlConnection, MysqlResultHeader } from './mysql-client.js'
import { MYSQL_MIGRATION_STATEMENTS } from './mysql-schema.js'
import { MysqlSessionBackend } from './mysql-session-backend.js'

// Row keys are stored in clear, but a row stays after its lock is gone: inspect by name, no listing.
const CAPABILITIES = defineCapabilities({
  fencing: 'native',
  notifications: 'process',
  clock: 'process',
  inspect: true,
})

const SQL = {
  ensure: 'INSERT IGNORE INTO latchkey_row_locks (lock_key) VALUES (?)',
  lock: 'SELECT lock_key FROM latchkey_row_locks WHERE lock_key = ? FOR UPDATE SKIP LOCKED',
  // Autocommit on another connection, after the row lock is held: LAST_INSERT_ID(expr) hands the new value
  // back in the OK packet, so increment and read are one atomic statement.
  fence: `INSERT INTO latchkey_fences (lock_key, value, holder_conn) VALUES (?, LAST_INSERT_ID(1), ?)
    ON DUPLICATE KEY UPDATE value = LAST_INSERT_ID(value + 1), holder_conn = VALUES(holder_conn)`,
  exists: 'SELECT COUNT(*) AS n FROM latchkey_row_locks WHERE lock_key = ?',
  holderConn: 'SELECT holder_conn AS v, CAST(value AS CHAR) AS token FROM latchkey_fences WHERE lock_key = ?',
} as const

/**
 * The `'for_update'` strategy, the classic lock on a database's exclusive row lock: the lease is an open
 * transaction on a pinned connection holding `SELECT ... FOR UPDATE SKIP LOCKED` on the lock's row in
 * `latchkey_row_locks`; release is `ROLLBACK`. A crashed holder's connection closes and InnoDB frees the row
 * by itself, so a dead holder never keeps the lock.
 *
 * Costs, which is why `'table'` is the default:
 * - one pool connection pinned per held lock, plus one connection of the pool kept for the fencing counter
 *   (`latchkey_fences`, incremented in autocommit so that a holder's rollback cannot take a token back). A
 *   draw from the shared pool would deadlock it: with every connection pinned by an acquire that holds its
 *   row, none is left to draw a token with (seen at 50 concurrent acquires on a 10-connection pool);
 * - each held lock is an open InnoDB transaction: it holds back purge (the history list grows while any
 *   lock is held) and counts against `innodb_lock_wait_timeout`-style monitoring as a long transaction;
 * - no queue, no fairness, mutex only, no lock-delay; the lease's TTL is kept by this process;
 * - needs `SKIP LOCKED` (MySQL 8.0+, MariaDB 10.6+), so a busy lock answers at once instead of waiting
 *   `innodb_lock_wait_timeout` (50 s by default) as a plain blocking `FOR UPDATE` would.
 */
export class MysqlForUpdateBackend extends MysqlSessionBackend {
  override readonly capabilities = CAPABILITIES
  private migrated: Promise<void> | undefined
  /** The connection that draws fencing tokens, one draw at a time (see the class notes). */
  private fenceConnection: Promise<MysqlConnection> | undefined
  private fenceQueue: Promise<unknown> = Promise.resolve()

  protected override connect(): Promise<MysqlConnection> {
    return this.migrate().then(() => super.connect())
  }

  protected async lockOn(connection: MysqlConnection, request: AcquireRequest) {
    const key = stateKey(request)
    const locked = await this.lockRow(connection, key)
    if (locked === 'missing') {
      await this.createRow(connection, key)
      if ((await this.lockRow(connection, key)) !== 'held') return false
    } else if (locked === 'busy') return false
    let header: MysqlResultHeader
    try {
      header = await this.drawFence(key, connection.threadId ?? 0)
      // The token counts only if the row lock was still ours after it was drawn (see the class notes).
      await this.run(connection, 'SELECT 1')
    } catch (error) {
      // Free the row lock now: a destroyed connection frees it only when the server notices, and a retry
      // right after this error would find the lock still taken.
      await this.run(connection, 'ROLLBACK').catch(() => undefined)
      throw error
    }
    return { token: BigInt(header.insertId), detail: key }
  }

  /** Opens the lease transaction and tries the row lock; rolls back unless it is held. */
  private async lockRow(connection: MysqlConnection, key: string): Promise<'held' | 'busy' | 'missing'> {
    // REPEATABLE READ is fine here: an equality match on an existing primary key takes a record lock only.
    await this.run(connection, 'START TRANSACTION')
    const rows = (await this.run(connection, SQL.lock, [key])) as unknown[]
    if (rows.length === 1) return 'held'
    const count = (await this.run(connection, SQL.exists, [key])) as { n: unknown }[]
    await this.run(connection, 'ROLLBACK')
    return Number(count[0]?.n) > 0 ? 'busy' : 'missing'
  }

  /**
   * First use of a name: insert its row. A duplicate check waits for a row lock, and a racer may already
   * hold the new row for its whole lease, so this one statement waits at most 1 s (then the lock is busy).
   */
  private async createRow(connection: MysqlConnection, key: string): Promise<void> {
    await this.run(connection, 'SET @latchkey_lwt = @@innodb_lock_wait_timeout, SESSION innodb_lock_wait_timeout = 1')
    try {
      await connection.query(SQL.ensure, [key])
    } catch (error) {
      if ((error as { errno?: unknown }).errno !== 1205) throw this.db.mapError(error)
    } finally {
      await this.run(connection, 'SET SESSION innodb_lock_wait_timeout = @latchkey_lwt')
    }
  }

  protected async unlockOn(hold: SessionHold<MysqlConnection>): Promise<boolean> {
    await this.run(hold.connection, 'ROLLBACK')
    return true
  }

  protected async stillHeld(hold: SessionHold<MysqlConnection>): Promise<boolean> {
    // The row lock lasts as long as the transaction, which lasts as long as the connection answers.
    await this.run(hold.connection, 'SELECT 1')
    return true
  }

  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    await this.migrate()
    const key = stateKey(ref)
    const exists = await this.db.query<{ n: unknown }[]>(SQL.exists, [key])
    if (Number(exists[0]?.n) === 0) return false
    // Autocommit: the probe's own row lock ends with the statement.
    const free = await this.db.query<unknown[]>(SQL.lock, [key])
    return free.length === 0
  }

  /** Kills the session holding the row (recorded at acquire; needs CONNECTION_ADMIN / SUPER for other users). */
  protected async forceRemote(ref: LockRef, spare: () => ReadonlySet<number>): Promise<boolean> {
    if (!(await this.isLocked({ ...ref, permits: 1 }))) return false
    const rows = await this.db.query<{ v: unknown }[]>(SQL.holderConn, [stateKey(ref)])
    const holder = rows[0]?.v
    if (holder === undefined || holder === null || spare().has(Number(holder))) return false
    await this.db.query('KILL CONNECTION ?', [Number(holder)]).catch(() => undefined)
    return true
  }

  /** The session recorded with the last token drawn, while the row is locked; no waiters are kept. */
  protected async serverState(key: string): Promise<ServerLockState> {
    if (!(await this.isLocked({ key, kind: 'mutex', permits: 1 }))) return { holders: [], waiters: [] }
    const rows = await this.db.query<{ v: unknown; token: unknown }[]>(SQL.holderConn, [key])
    const row = rows[0]
    if (row === undefined || row.v === null) return { holders: [], waiters: [] }
    return { holders: [{ session: Number(row.v), kind: 'mutex', token: BigInt(String(row.token)) }], waiters: [] }
  }

  protected sessionOf(connection: MysqlConnection): number | undefined {
    return connection.threadId ?? undefined
  }

  /** Increments the lock's fencing counter in autocommit on the backend's own fence connection. */
  private drawFence(key: string, holder: number): Promise<MysqlResultHeader> {
    const draw = async (): Promise<MysqlResultHeader> => {
      this.fenceConnection ??= this.db.connect()
      const connection = await this.fenceConnection.catch((error: unknown) => {
        this.fenceConnection = undefined
        throw this.db.mapError(error)
      })
      try {
        return (await this.run(connection, SQL.fence, [key, holder])) as MysqlResultHeader
      } catch (error) {
        if (this.db.isFatal((error as { cause?: unknown }).cause ?? error)) {
          this.fenceConnection = undefined
          connection.destroy()
        }
        throw error
      }
    }
    const result = this.fenceQueue.then(draw, draw)
    this.fenceQueue = result.catch(() => undefined)
    return result
  }

  /** Frees the held locks, then gives the fence connection back to the pool. */
  override async close(): Promise<void> {
    await super.close()
    const fence = this.fenceConnection
    this.fenceConnection = undefined
    if (fence !== undefined)
      await fence.then(
        (c) => c.release(),
        () => undefined,
      )
  }

  private migrate(): Promise<void> {
    this.migrated ??= this.db
      .with(async (c) => {
        for (const statement of MYSQL_MIGRATION_STATEMENTS) await c.query(statement)
      })
      .catch((error: unknown) => {
        this.migrated = undefined
        throw error
      })
    return this.migrated
  }
}
