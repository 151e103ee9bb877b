/**
 * The acquire transaction shared by the MySQL and PostgreSQL `'table'` strategies: load one lock's state
 * under its serialisation row, decide with the shared grant rules, write the outcome. Each dialect supplies
 * the statements ({@link TableTx}); this file owns the order they run in, which is what keeps them free of
 * deadlocks (see {@link acquireInTable}).
 */
import { decideGrant, type HolderState, occupies, type WaiterState } from '../../backend/grant-rules.js'
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import type { SqlSession } from './table-dialect.js'

/** The per-lock counters kept on the lock's serialisation row. Both only ever go up. */
export interface LockCounters {
  readonly fence: bigint
  readonly seq: number
}

/** The statements of one acquire transaction, already inside `BEGIN` on one connection. */
export interface TableTx {
  /** Locks the lock's `latchkey_locks` row by primary key (creating it first if needed) and reads its counters. */
  lockKey(key: string): Promise<LockCounters>
  /** Every holder row of `key`, locked, with the database clock in epoch ms. */
  holders(key: string): Promise<{ now: number; holders: HolderState[] }>
  /** Every waiter row of `key`, locked. */
  waiters(key: string): Promise<WaiterState[]>
  deleteHolders(key: string, owners: readonly string[]): Promise<void>
  deleteWaiters(key: string, owners: readonly string[]): Promise<void>
  insertHolder(key: string, holder: HolderState): Promise<void>
  upsertWaiter(key: string, waiter: WaiterState): Promise<void>
  saveCounters(key: string, counters: LockCounters): Promise<void>
}

/**
 * Runs the grant decision inside an open transaction.
 *
 * Lock order, the same in every transaction that touches a lock: its `latchkey_locks` row, then its
 * holder rows, then its waiter rows, all found by primary key (or by the `lock_key` prefix of one) under
 * READ COMMITTED. Renew / release / leaveQueue are single autocommit statements on one holder or waiter
 * row, so they hold one row lock and wait for nothing else. Two acquirers of the same lock queue on the
 * first row; acquirers of different locks share no rows. With no gap locks (see the MySQL backend) there is
 * no cycle, hence no deadlock.
 *
 * A retry by the same owner after a lost reply finds its own live holder row and gets the same token back,
 * so the core's retry after a connection error never blocks on itself.
 */
export async function acquireInTable(tx: TableTx, request: AcquireRequest, key: string): Promise<AcquireResult> {
  const counters = await tx.lockKey(key)
  const { now, holders } = await tx.holders(key)
  const own = holders.find((h) => h.owner === request.owner && now < h.expiresAt)
  if (own !== undefined) return { acquired: true, token: own.token }
  const live = holders.filter((h) => occupies(h, now))
  const stale = holders.filter((h) => !occupies(h, now)).map((h) => h.owner)
  if (stale.length > 0) await tx.deleteHolders(key, stale)
  const needsLine = request.queue || request.kind === 'fair' || request.kind === 'write' || request.kind === 'read'
  const allWaiters = needsLine ? await tx.waiters(key) : []
  const waiters = allWaiters.filter((w) => w.expiresAt > now)
  const gone = allWaiters.filter((w) => w.expiresAt <= now).map((w) => w.owner)
  if (gone.length > 0) await tx.deleteWaiters(key, gone)
  const decision = decideGrant(request, live, waiters, now)
  const mine = waiters.find((w) => w.owner === request.owner)
  if (!decision.grant) {
    if (request.queue) {
      const seq = mine?.seq ?? counters.seq + 1
      await tx.upsertWaiter(key, { owner: request.owner, kind: request.kind, seq, expiresAt: now + request.queueTtlMs })
      if (seq !== mine?.seq) await tx.saveCounters(key, { fence: counters.fence, seq })
    }
    return { acquired: false, retryAfterMs: decision.retryAfterMs, permitsInForce: decision.permitsInForce }
  }
  const token = counters.fence + 1n
  const expiresAt = now + request.ttlMs
  const holder = {
    owner: request.owner,
    kind: request.kind,
    expiresAt,
    delayUntil: expiresAt + request.lockDelayMs,
    token,
    permits: request.kind === 'semaphore' ? request.permits : 0,
  }
  await tx.insertHolder(key, holder)
  if (mine !== undefined) await tx.deleteWaiters(key, [request.owner])
  await tx.saveCounters(key, { fence: token, seq: counters.seq })
  return { acquired: true, token }
}

/** What {@link precheckBusy} reads, without locks, before an acquire transaction. */
export interface LiveSummary {
  /** Holders still occupying their slot. */
  readonly n: number
  readonly firstFree: number
  readonly lastFree: number
  /** Whether `request.owner` is one of them (a retry after a lost reply must reach the transaction). */
  readonly mine: boolean
  readonly now: number
  /** The largest permit count recorded by those holders (0: none recorded). */
  readonly permits: number
}

/**
 * Reads the {@link LiveSummary} of the lock whose key is `encodedKey` with the dialect's `summary` statement, in
 * autocommit (`owner`: whose row `mine` looks for; '' for none).
 */
export async function readLiveSummary(
  pool: SqlSession,
  summary: string,
  encodedKey: unknown,
  owner: string,
): Promise<LiveSummary> {
  const { rows } = await pool.run<Record<keyof LiveSummary, number | string>>(summary, [owner, encodedKey])
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

/**
 * For mutex and semaphore requests (which keep no place in line), a plain read can already tell that the
 * lock is taken: then the caller answers "not acquired" without opening a transaction, so polling waiters
 * never queue on the lock row in front of the one that can win. A stale read only delays a grant. A semaphore
 * whose holders recorded another permit count goes to the transaction, which alone may report the mismatch
 * (a stale read must not fail the call).
 */
export function precheckBusy(request: AcquireRequest, live: LiveSummary): AcquireResult | undefined {
  if (live.mine || live.n === 0) return undefined
  if (request.kind === 'semaphore' && live.permits > 0 && live.permits !== request.permits) return undefined
  if (request.kind === 'mutex') return { acquired: false, retryAfterMs: Math.max(1, live.lastFree - live.now) }
  if (request.kind === 'semaphore' && live.n >= request.permits) {
    return { acquired: false, retryAfterMs: Math.max(1, live.firstFree - live.now) }
  }
  return undefined
}
