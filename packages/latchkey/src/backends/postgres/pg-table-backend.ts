import { createHash } from 'node:crypto'
import { type HolderState, stateKey, type WaiterState } from '../../backend/grant-rules.js'
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
import { isFatal, type PgClient, type PgRunner } from './pg-client.js'
import { PgListener } from './pg-listener.js'
import {
  POSTGRES_ADD_PERMITS,
  POSTGRES_HAS_PERMITS,
  POSTGRES_MIGRATION_STATEMENTS,
  RELEASE_CHANNEL,
  PG_SQL as SQL,
} from './pg-schema.js'

const CAPABILITIES: BackendCapabilities = Object.freeze({
  fencing: 'native',
  notifications: 'global',
  kinds: Object.freeze(['mutex', 'fair', 'read', 'write', 'semaphore'] as const),
  crossProcess: true,
  lockDelay: true,
  clock: 'server',
})

/** The NOTIFY payload of a lock key: fixed length (payloads are capped at 8 000 bytes), no NUL byte. */
export function channelPayload(key: string): string {
  return createHash('sha1').update(key, 'utf8').digest('hex')
}

/**
 * The PostgreSQL `'table'` strategy: the MySQL `'table'` design (see `acquireInTable`) on PostgreSQL, with
 * releases announced by `NOTIFY` and heard by one `LISTEN`ing client per backend.
 *
 * PostgreSQL takes no gap or next-key locks at all (only SERIALIZABLE adds predicate locks, which never
 * block), so note 000's InnoDB deadlock cannot happen here; the fixed lock order (lock row, holders,
 * waiters) rules out the ordinary row-lock cycle too. Transactions run READ COMMITTED explicitly, whatever
 * the database default, so a row locked after a wait is re-read at its latest version.
 */
export class PgTableBackend implements Backend {
  readonly name = 'postgres'
  readonly capabilities = CAPABILITIES
  private readonly listener: PgListener
  private migrated: Promise<void> | undefined

  constructor(private readonly db: PgRunner) {
    this.listener = new PgListener(db, RELEASE_CHANNEL)
  }

  async tryAcquire(request: AcquireRequest): Promise<AcquireResult> {
    await this.migrate()
    const key = stateKey(request)
    if (request.kind === 'mutex' || request.kind === 'semaphore') {
      const busy = precheckBusy(request, await this.summary(key, request.owner))
      if (busy !== undefined) return busy
    }
    return this.transaction((c) => acquireInTable(pgTx(c), request, key))
  }

  async renew(request: RenewRequest): Promise<boolean> {
    await this.migrate()
    const result = await this.db.query(SQL.renew, [
      Math.ceil(request.ttlMs),
      keyBytes(stateKey(request)),
      request.owner,
    ])
    return result.rowCount === 1
  }

  async release(request: HolderRef): Promise<boolean> {
    await this.migrate()
    const key = stateKey(request)
    const args = [keyBytes(key), request.owner, RELEASE_CHANNEL, channelPayload(key)]
    return (await this.db.query(SQL.release, args)).rowCount === 1
  }

  async leaveQueue(request: HolderRef): Promise<void> {
    await this.migrate()
    const key = stateKey(request)
    await this.db.query(SQL.leave, [keyBytes(key), request.owner, RELEASE_CHANNEL, channelPayload(key)])
  }

  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    await this.migrate()
    const { rows } = await this.db.query<{ n: number }>(SQL.countLive, [keyBytes(stateKey(ref))])
    const n = rows[0]?.n ?? 0
    return ref.kind === 'semaphore' ? n >= ref.permits : n > 0
  }

  async forceRelease(ref: LockRef): Promise<boolean> {
    await this.migrate()
    const key = stateKey(ref)
    const bytes = keyBytes(key)
    return this.transaction(async (c) => {
      // Same lock order as an acquire: the lock row first (none means nothing was ever held).
      if ((await c.query(SQL.lockKey, [bytes])).rows.length === 0) return false
      await c.query(SQL.dropWaiters, [bytes])
      const dropped = (await c.query(SQL.dropHolders, [bytes])).rowCount ?? 0
      await c.query(SQL.notify, [RELEASE_CHANNEL, channelPayload(key)])
      return dropped > 0
    })
  }

  subscribe(ref: LockRef): ReleaseSubscription {
    return this.listener.subscribe(channelPayload(stateKey(ref)), ref.kind)
  }

  /** Stops listening (the listening client is destroyed, not returned); the pool stays open. */
  async close(): Promise<void> {
    await this.listener.close()
  }

  private async summary(key: string, owner: string): Promise<LiveSummary> {
    const { rows } = await this.db.query<Record<keyof LiveSummary, number | string>>(SQL.summary, [
      keyBytes(key),
      owner,
    ])
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

  /** Creates the tables (and adds `permits` if missing) once; concurrent creators are serialised by an advisory lock. */
  private migrate(): Promise<void> {
    this.migrated ??= this.transaction(async (c) => {
      await c.query("SELECT pg_advisory_xact_lock(hashtextextended('latchkey:migration', 0))")
      for (const statement of POSTGRES_MIGRATION_STATEMENTS) await c.query(statement)
      const { rows } = await c.query<{ n: number }>(POSTGRES_HAS_PERMITS)
      if ((rows[0]?.n ?? 0) === 0) await c.query(POSTGRES_ADD_PERMITS)
    }).catch((error: unknown) => {
      this.migrated = undefined
      throw error
    })
    return this.migrated
  }

  private transaction<T>(fn: (c: PgClient) => Promise<T>): Promise<T> {
    return this.db.with(async (c) => {
      await c.query('BEGIN ISOLATION LEVEL READ COMMITTED')
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

/** Lock keys are stored as their UTF-8 bytes. */
export function keyBytes(key: string): Buffer {
  return Buffer.from(key, 'utf8')
}

interface RawHolder {
  owner: string
  kind: LockKind
  expiresAt: string
  delayUntil: string
  token: string
  permits: string
  now: string
}

/** The PostgreSQL statements of one acquire transaction. */
function pgTx(c: PgClient): TableTx {
  let lockNow = 0
  return {
    async lockKey(key: string): Promise<LockCounters> {
      const bytes = keyBytes(key)
      let { rows } = await c.query<{ fence: string; seq: string; now: string }>(SQL.lockKey, [bytes])
      if (rows.length === 0) {
        // A concurrent first insert makes this wait for that transaction, then do nothing; no lock is kept.
        await c.query(SQL.ensureKey, [bytes])
        ;({ rows } = await c.query<{ fence: string; seq: string; now: string }>(SQL.lockKey, [bytes]))
      }
      const row = rows[0]
      if (row === undefined) throw new Error(`latchkey: postgres backend could not create the lock row of ${key}`)
      lockNow = Number(row.now)
      return { fence: BigInt(row.fence), seq: Number(row.seq) }
    },
    async holders(key: string) {
      const { rows } = await c.query<RawHolder>(SQL.holders, [keyBytes(key)])
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
      const { rows } = await c.query<WaiterState & { seq: string; expiresAt: string }>(SQL.waiters, [keyBytes(key)])
      return rows.map((w) => ({ ...w, seq: Number(w.seq), expiresAt: Number(w.expiresAt) }))
    },
    async deleteHolders(key, owners) {
      await c.query(SQL.deleteHolders, [keyBytes(key), owners])
    },
    async deleteWaiters(key, owners) {
      await c.query(SQL.deleteWaiters, [keyBytes(key), owners])
    },
    async insertHolder(key, h) {
      await c.query(SQL.insertHolder, [
        keyBytes(key),
        h.owner,
        h.kind,
        h.expiresAt,
        h.delayUntil,
        h.token.toString(),
        h.permits ?? 0,
      ])
    },
    async upsertWaiter(key, w) {
      await c.query(SQL.upsertWaiter, [keyBytes(key), w.owner, w.kind, w.seq, w.expiresAt])
    },
    async saveCounters(key, counters) {
      await c.query(SQL.saveCounters, [counters.fence.toString(), counters.seq, keyBytes(key)])
    },
  }
}
