import { createHash } from 'node:crypto'
import { defineCapabilities } from '../../backend/backend-base.js'
import { stateKey } from '../../backend/grant-rules.js'
import type { AcquireRequest, LockRef } from '../../backend/types.js'
import type { SessionHold } from '../sql/session-hold.js'
import type { ServerLockState } from '../sql/session-inspect.js'
import type { MysqlConnection } from './mysql-client.js'
import { MysqlSessionBackend } from './mysql-session-backend.js'

// GET_LOCK names are hashes: a lock can be inspected by name, never listed.
const CAPABILITIES = defineCapabilities({ notifications: 'process', clock: 'process', inspect: true })

/**
 * The server-side name of a lock: `latchkey:` and 40 hex digits of SHA-256 (49 characters). MySQL 5.7+
 * refuses names over 64 characters and MariaDB compares them case-insensitively, so every name is hashed:
 * distinct names can then only collide with probability ~2^-160.
 */
export function getLockName(key: string): string {
  return `latchkey:${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 40)}`
}

/**
 * The `'get_lock'` strategy: `GET_LOCK(name, 0)` on a connection pinned for the lease, `RELEASE_LOCK` on
 * the same connection. The lock lives as long as that session: a killed connection or a crashed process
 * frees it at once, and `renew` then reports the lease lost (it checks `IS_USED_LOCK(name) = CONNECTION_ID()`
 * on the pinned connection). Mutex only, no fencing token (`GET_LOCK` has no counter), no lock-delay. The
 * lease's TTL is kept by this process (see {@link SessionBackend}). Each held lock pins one pool connection.
 * User locks are not replicated: every process must use the same server.
 */
export class MysqlGetLockBackend extends MysqlSessionBackend {
  override readonly capabilities = CAPABILITIES

  protected async lockOn(connection: MysqlConnection, request: AcquireRequest) {
    const name = getLockName(stateKey(request))
    const got = await this.value(connection, 'SELECT GET_LOCK(?, 0) AS v', [name])
    return Number(got) === 1 ? { token: 0n, detail: name } : false
  }

  protected async unlockOn(hold: SessionHold<MysqlConnection>): Promise<boolean> {
    return Number(await this.value(hold.connection, 'SELECT RELEASE_LOCK(?) AS v', [hold.detail])) === 1
  }

  protected async stillHeld(hold: SessionHold<MysqlConnection>): Promise<boolean> {
    const mine = await this.value(hold.connection, 'SELECT IS_USED_LOCK(?) = CONNECTION_ID() AS v', [hold.detail])
    return Number(mine) === 1
  }

  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    const rows = await this.db.query<{ v: unknown }[]>('SELECT IS_USED_LOCK(?) IS NOT NULL AS v', [
      getLockName(stateKey(ref)),
    ])
    return Number(rows[0]?.v) === 1
  }

  /** Kills the session holding the lock (needs the CONNECTION_ADMIN / SUPER privilege for other users). */
  protected async forceRemote(ref: LockRef, spare: () => ReadonlySet<number>): Promise<boolean> {
    const rows = await this.db.query<{ v: unknown }[]>('SELECT IS_USED_LOCK(?) AS v', [getLockName(stateKey(ref))])
    const holder = rows[0]?.v
    if (holder === null || holder === undefined || spare().has(Number(holder))) return false
    await this.db.query('KILL CONNECTION ?', [Number(holder)])
    return true
  }

  /** `IS_USED_LOCK(name)`: the connection id of the holder; GET_LOCK keeps no waiters (latchkey never blocks in it). */
  protected async serverState(key: string): Promise<ServerLockState> {
    const rows = await this.db.query<{ v: unknown }[]>('SELECT IS_USED_LOCK(?) AS v', [getLockName(key)])
    const holder = rows[0]?.v
    return {
      holders: holder === null || holder === undefined ? [] : [{ session: Number(holder), kind: 'mutex' }],
      waiters: [],
    }
  }

  protected sessionOf(connection: MysqlConnection): number | undefined {
    return connection.threadId ?? undefined
  }

  private async value(connection: MysqlConnection, sql: string, values: unknown[]): Promise<unknown> {
    return ((await this.run(connection, sql, values)) as { v: unknown }[])[0]?.v
  }
}
