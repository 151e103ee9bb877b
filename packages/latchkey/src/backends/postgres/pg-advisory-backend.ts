import { createHash } from 'node:crypto'
import { defineCapabilities } from '../../backend/backend-base.js'
import { stateKey } from '../../backend/grant-rules.js'
import type { AcquireRequest, HolderRef, LockRef } from '../../backend/types.js'
import type { SessionHold } from '../sql/session-hold.js'
import type { LocalSession, ServerLockState } from '../sql/session-inspect.js'
import { SessionBackend } from '../sql/sql-session-backend.js'
import type { PgClient, PgRunner } from './pg-client.js'
import { WriterIntents } from './pg-writer-intents.js'

// Advisory keys are hashes: a lock can be inspected by name, never listed. Waiting writers hold an intent.
const CAPABILITIES = defineCapabilities({
  notifications: 'process',
  kinds: ['mutex', 'read', 'write'],
  clock: 'process',
  inspect: true,
  waiters: 'queued',
})

/**
 * The 64-bit advisory key of a lock: the first 8 bytes of SHA-256 of the key, as a signed bigint. Computed
 * on the client so every client and server version agrees (`hashtextextended` is internal to PostgreSQL).
 * Two names collide with probability ~n²/2^65 for n names in use at once (about 1 in 3.7e7 for a million
 * names held together); a collision only makes two locks exclude each other, never lets two holders in.
 */
export function advisoryKey(key: string): bigint {
  return createHash('sha256').update(key, 'utf8').digest().readBigInt64BE(0)
}

/** `pg_locks` shows a bigint advisory key as classid (high 32 bits) and objid (low 32 bits), objsubid 1. */
function lockParts(k: bigint): [string, string] {
  const u = BigInt.asUintN(64, k)
  return [(u >> 32n).toString(), (u & 0xffffffffn).toString()]
}

/** The advisory key readers check for waiting writers (see {@link WriterIntents}). */
function writerIntentKey(key: string): bigint {
  return advisoryKey(`${key}\u0000writer-intent`)
}

const HELD_BY = `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND classid = $1::oid AND objid = $2::oid`

/** A shared lock, unless a writer is waiting (one statement, so a reader never holds it while checking). */
const READ_IF_NO_WRITER = `SELECT CASE WHEN EXISTS (${HELD_BY})
  THEN false ELSE pg_try_advisory_lock_shared($3::bigint) END AS v`

/**
 * The `'advisory'` strategy: `pg_try_advisory_lock(key)` on a client pinned for the lease, unlocked on the
 * same client. Session-level: a terminated backend (`pg_terminate_backend`) or a crashed process frees the
 * lock at once, and `renew` then reports the lease lost. Mutex and read-write, no fencing token, no lock-delay; the
 * lease's TTL is kept by this process. Each held lock pins one pool client, and so does each waiting
 * writer (its intent, see {@link WriterIntents}). `read`/`write` use `pg_try_advisory_lock_shared` / the
 * exclusive lock on the same key as `mutex`. Does not work behind a
 * transaction-pooling proxy (PgBouncer in transaction mode), which moves sessions between server backends.
 */
export class PgAdvisoryBackend extends SessionBackend<PgClient, PgRunner> {
  readonly name = 'postgres'
  override readonly capabilities = CAPABILITIES
  private readonly intents: WriterIntents

  constructor(db: PgRunner) {
    super(db)
    this.intents = new WriterIntents(db)
  }

  protected async lockOn(client: PgClient, request: AcquireRequest) {
    const key = stateKey(request)
    const k = advisoryKey(key).toString()
    const ok =
      request.kind === 'read'
        ? await this.value(client, READ_IF_NO_WRITER, [...lockParts(writerIntentKey(key)), k])
        : await this.value(client, 'SELECT pg_try_advisory_lock($1::bigint) AS v', [k])
    const intent = `${key}\u0000${request.owner}`
    if (ok === true) {
      await this.intents.drop(intent)
      return { token: 0n, detail: `${request.kind === 'read' ? 'r' : 'w'}${k}` }
    }
    if (request.kind === 'write' && request.queue) {
      await this.intents.keep(intent, writerIntentKey(key).toString(), request.queueTtlMs)
    }
    return false
  }

  override async leaveQueue(request: HolderRef): Promise<void> {
    await this.intents.drop(`${stateKey(request)}\u0000${request.owner}`)
  }

  override async close(): Promise<void> {
    await this.intents.dropAll()
    await super.close()
  }

  protected async unlockOn(hold: SessionHold<PgClient>): Promise<boolean> {
    const fn = hold.detail.startsWith('r') ? 'pg_advisory_unlock_shared' : 'pg_advisory_unlock'
    return (await this.value(hold.connection, `SELECT ${fn}($1::bigint) AS v`, [hold.detail.slice(1)])) === true
  }

  protected async stillHeld(hold: SessionHold<PgClient>): Promise<boolean> {
    const [classid, objid] = lockParts(BigInt(hold.detail.slice(1)))
    const sql = `SELECT EXISTS (${HELD_BY} AND pid = pg_backend_pid()) AS v`
    return (await this.value(hold.connection, sql, [classid, objid])) === true
  }

  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    const [classid, objid] = lockParts(advisoryKey(stateKey(ref)))
    const { rows } = await this.db.query<{ v: boolean }>(`SELECT EXISTS (${HELD_BY}) AS v`, [classid, objid])
    return rows[0]?.v === true
  }

  /** Terminates the backend holding the lock (needs superuser or the pg_signal_backend role). */
  protected async forceRemote(ref: LockRef, spare: () => ReadonlySet<number>): Promise<boolean> {
    const parts = lockParts(advisoryKey(stateKey(ref)))
    const held = await this.db.query<{ pid: number }>(HELD_BY, parts)
    const mine = spare()
    const others = held.rows.map((r) => r.pid).filter((pid) => !mine.has(pid))
    if (others.length === 0) return false
    // Only sessions still holding the key are ended: a pid that let go meanwhile may serve anyone by now.
    const { rows } = await this.db.query<{ v: boolean }>(
      `SELECT pg_terminate_backend(pid) AS v FROM (${HELD_BY}) h WHERE pid = ANY($3::int[])`,
      [...parts, others],
    )
    return rows.some((r) => r.v)
  }

  /**
   * `pg_locks`: the backends granted the advisory key (ShareLock: a reader; ExclusiveLock: a mutex or writer)
   * and those holding its writer-intent key (waiting writers).
   */
  protected async serverState(key: string): Promise<ServerLockState> {
    const sql = `SELECT pid, mode FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND classid = $1::oid AND objid = $2::oid ORDER BY pid`
    const read = async (k: bigint) => (await this.db.query<{ pid: number; mode: string }>(sql, lockParts(k))).rows
    const [held, intents] = await Promise.all([read(advisoryKey(key)), read(writerIntentKey(key))])
    return {
      holders: held.map((r) => ({ session: r.pid, kind: r.mode === 'ShareLock' ? 'read' : 'mutex' })),
      waiters: intents.map((r) => ({ session: r.pid, kind: 'write' })),
    }
  }

  protected sessionOf(client: PgClient): number | undefined {
    return client.processID ?? undefined
  }

  protected override localWaiters(key: string): LocalSession[] {
    const prefix = `${key}\u0000`
    return this.intents
      .sessions(prefix)
      .map(({ id, session }) => ({ session, owner: id.slice(prefix.length), kind: 'write' as const }))
  }

  private async value(client: PgClient, sql: string, values: unknown[]): Promise<unknown> {
    try {
      return (await client.query<{ v: unknown }>(sql, values)).rows[0]?.v
    } catch (error) {
      throw this.db.mapError(error)
    }
  }
}
