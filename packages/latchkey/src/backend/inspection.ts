/**
 * What an operator sees of a lock: its holders and waiters as the backend stores them (`Locks.inspect`,
 * `Locks.list`, the `latchkey` CLI). The shapes every backend answers, and the pure helpers that build them from
 * the holder and waiter records most backends keep.
 */
import type { LockKind } from './types.js'

/** One holder of a lock, as the backend stores it. Fields a backend cannot know are omitted (see each backend). */
export interface HolderInfo {
  /** The owner id written into the backend: a UUID per lease for latchkey, `<uuid>:<thread>` for Redisson. */
  readonly owner: string
  readonly kind: LockKind
  /** The fencing token; omitted where the backend issues none (RedLock, GET_LOCK, advisory locks). */
  readonly token?: bigint
  /** When the lease ends (epoch ms, the backend's clock); omitted where the server keeps no expiry (sessions). */
  readonly expiresAt?: number
  /** Holds recorded by the server for this owner (Redisson counts re-entries); omitted when it keeps no count. */
  readonly count?: number
  /** A semaphore holder's permit count in force. */
  readonly permits?: number
}

/** One waiter the backend stores (a place in line, a waiting node or key, a registered watcher). */
export interface WaiterInfo {
  readonly owner: string
  readonly kind: LockKind
  /** When it started waiting (epoch ms), where the backend records it. */
  readonly since?: number
}

/** The state of one lock name: its holders and stored waiters, the mutex/read-write family and the semaphore. */
export interface LockInspection {
  /** The lock key in the backend (`namespace:name`); `Locks.inspect` answers the name without the namespace. */
  readonly name: string
  /** The kind held (or, when free, waited for); undefined when nobody holds or waits. */
  readonly kind: LockKind | undefined
  readonly holders: readonly HolderInfo[]
  readonly waiters: readonly WaiterInfo[]
}

/** What `Backend.list` is asked: lock keys starting with `prefix`, at most `limit` of them. */
export interface ListRequest {
  readonly prefix: string
  readonly limit: number
}

/** One lock found by a listing. */
export interface LockSummary {
  /** The lock key in the backend; `Locks.list` answers the name without the namespace. */
  readonly name: string
  readonly kind: LockKind | undefined
  readonly holders: number
  readonly waiters: number
}

/** The kind an inspection reports: the holders' (an exclusive one first), else the first waiter's. */
export function inspectionKind(holders: readonly HolderInfo[], waiters: readonly WaiterInfo[]): LockKind | undefined {
  const exclusive = holders.find((h) => h.kind !== 'read' && h.kind !== 'semaphore')
  return exclusive?.kind ?? holders[0]?.kind ?? waiters[0]?.kind
}

/** An inspection of `name`, its kind derived from its holders and waiters. */
export function inspection(
  name: string,
  holders: readonly HolderInfo[],
  waiters: readonly WaiterInfo[],
): LockInspection {
  return { name, kind: inspectionKind(holders, waiters), holders, waiters }
}

/** The summary of one inspection (for `list`). */
export function summaryOf(state: LockInspection): LockSummary {
  return { name: state.name, kind: state.kind, holders: state.holders.length, waiters: state.waiters.length }
}

/**
 * The state keys `list` scans for, mapped back to lock keys: a semaphore's state key is `<key>\0semaphore`
 * (`stateKey`). Sorted, without duplicates, only those starting with `prefix`.
 */
export function lockKeysOf(stateKeys: Iterable<string>, request: ListRequest): string[] {
  const keys = new Set<string>()
  for (const s of stateKeys) {
    const key = s.endsWith('\u0000semaphore') ? s.slice(0, -'\u0000semaphore'.length) : s
    if (key.startsWith(request.prefix)) keys.add(key)
  }
  return [...keys].sort()
}

/**
 * Inspects `keys` in order, a batch at a time, and keeps the first `limit` that somebody holds or waits on (a key
 * whose holders all expired since it was found is skipped).
 */
export async function summariesOf(
  keys: readonly string[],
  limit: number,
  inspect: (key: string) => Promise<LockInspection>,
): Promise<LockSummary[]> {
  const found: LockSummary[] = []
  for (let i = 0; i < keys.length && found.length < limit; i += LIST_BATCH) {
    const states = await Promise.all(keys.slice(i, i + LIST_BATCH).map(inspect))
    for (const s of states) if (s.holders.length + s.waiters.length > 0) found.push(summaryOf(s))
  }
  return found.slice(0, limit)
}

/** Locks inspected at once while listing. */
const LIST_BATCH = 32

/** A holder record as the embedded and SQL backends store it (times in epoch ms, token as text or bigint). */
export interface HolderRow {
  readonly owner: string
  readonly kind: string
  readonly expiresAt: number | string
  readonly token: bigint | number | string
  readonly permits?: number | string | null | undefined
}

/** A holder row as a {@link HolderInfo}. */
export function holderFromRow(row: HolderRow): HolderInfo {
  const kind = row.kind as LockKind
  const permits = Number(row.permits ?? 0)
  return {
    owner: row.owner,
    kind,
    token: BigInt(row.token),
    expiresAt: Number(row.expiresAt),
    ...(kind === 'semaphore' && permits > 0 ? { permits } : {}),
  }
}

/** A waiter record as the embedded and SQL backends store it: a place in line (`seq`), no start time. */
export interface WaiterRow {
  readonly owner: string
  readonly kind: string
  readonly seq: number | string
}

/** Waiter rows as {@link WaiterInfo}s, in line order. */
export function waitersFromRows(rows: readonly WaiterRow[]): WaiterInfo[] {
  return [...rows]
    .sort((a, b) => Number(a.seq) - Number(b.seq))
    .map((row) => ({ owner: row.owner, kind: row.kind as LockKind }))
}
