/**
 * The grant rules of every lock kind, as a pure function over a lock's current holders and waiters.
 * The embedded backends (memory, SQLite) load the state, call {@link decideGrant} and write the result in
 * one atomic step; server backends encode the same rules in their own language (Lua, SQL).
 */
import type { AcquireRequest, LockKind, LockRef } from './types.js'

/** One holder of a lock. `delayUntil` is `expiresAt + lockDelayMs`: until then the slot stays taken. */
export interface HolderState {
  readonly owner: string
  readonly kind: LockKind
  readonly expiresAt: number
  readonly delayUntil: number
  readonly token: bigint
  /** A semaphore holder's permit count (the count in force while it holds). Absent or 0: unknown, never compared. */
  readonly permits?: number | undefined
}

/** One waiter keeping its place in line. `seq` orders waiters (lower first). */
export interface WaiterState {
  readonly owner: string
  readonly kind: LockKind
  readonly seq: number
  readonly expiresAt: number
}

/** The outcome of {@link decideGrant}. */
export interface GrantDecision {
  readonly grant: boolean
  /** Milliseconds until the earliest blocking holder's slot frees, when blocked by holders. */
  readonly retryAfterMs?: number | undefined
  /** Set when a semaphore's holders use another permit count than the request: the count in force. */
  readonly permitsInForce?: number | undefined
}

const EXCLUSIVE: ReadonlySet<LockKind> = new Set<LockKind>(['mutex', 'fair', 'write'])

/** Whether a kind excludes every other holder of the same lock. */
export function isExclusive(kind: LockKind): boolean {
  return EXCLUSIVE.has(kind)
}

/** The storage key of a lock's state: semaphores live apart from the mutex / read-write family. */
export function stateKey(ref: LockRef): string {
  return ref.kind === 'semaphore' ? `${ref.key}\u0000semaphore` : ref.key
}

/** A holder still occupies its slot (its lease, or its lock-delay after expiry, has not run out). */
export function occupies(holder: HolderState, now: number): boolean {
  return now < holder.delayUntil
}

/** A holder's lease is still valid (it may renew or be released as the holder). */
export function isValid(holder: HolderState, now: number): boolean {
  return now < holder.expiresAt
}

/**
 * Decides whether `request` may be granted now. `holders` and `waiters` must already be pruned of the
 * entries that no longer occupy / no longer wait (see {@link occupies}).
 *
 * - exclusive kinds need no holder at all; `fair` also needs to be first in line (or the line to be empty);
 *   `write` needs to be the first waiting writer (or no writer waiting).
 * - `read` needs no exclusive holder and no waiting writer (so writers are not starved).
 * - `semaphore` needs fewer than `permits` holders, all of the same `permits` as the request (else the decision
 *   carries `permitsInForce`: the count stays with the semaphore while it has holders, and the first acquirer
 *   after it is idle defines it again).
 */
export function decideGrant(
  request: AcquireRequest,
  holders: readonly HolderState[],
  waiters: readonly WaiterState[],
  now: number,
): GrantDecision {
  if (request.kind === 'semaphore') {
    const permitsInForce = permitsOf(holders)
    if (permitsInForce !== undefined && permitsInForce !== request.permits) return { grant: false, permitsInForce }
  }
  const blockers =
    request.kind === 'semaphore'
      ? holders.length >= request.permits
        ? holders
        : []
      : request.kind === 'read'
        ? holders.filter((h) => isExclusive(h.kind))
        : holders
  if (blockers.length > 0) {
    const frees = request.kind === 'semaphore' ? Math.min(...blockers.map((h) => h.delayUntil)) : maxDelay(blockers)
    return { grant: false, retryAfterMs: Math.max(1, frees - now) }
  }
  const line = lineFor(request.kind, waiters)
  const first = line[0]
  if (first !== undefined && (request.kind === 'read' || first.owner !== request.owner)) return { grant: false }
  return { grant: true }
}

/** The permit count the (semaphore) holders agreed on, if any of them recorded one. */
export function permitsOf(holders: readonly HolderState[]): number | undefined {
  for (const h of holders) if (h.permits !== undefined && h.permits > 0) return h.permits
  return undefined
}

function maxDelay(holders: readonly HolderState[]): number {
  let max = 0
  for (const h of holders) max = Math.max(max, h.delayUntil)
  return max
}

/** The waiters that stand before a request of `kind`, in order. */
function lineFor(kind: LockKind, waiters: readonly WaiterState[]): WaiterState[] {
  if (kind === 'mutex' || kind === 'semaphore') return []
  const relevant = kind === 'fair' ? waiters : waiters.filter((w) => w.kind === 'write')
  return [...relevant].sort((a, b) => a.seq - b.seq)
}
