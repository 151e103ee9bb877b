/**
 * The grant rules as a model a test can step beside a real backend: the holders and waiters of one lock name,
 * and what the rules say must happen next. It is written apart from every backend's own encoding of the rules
 * (`decideGrant`, the Redis scripts, the ZooKeeper and etcd lines), so that each of them is checked against it.
 *
 * Only what every backend must agree on is modelled. One run uses one group of kinds on one name (mutexes, fair
 * mutexes, read-write, or semaphores): which kinds of different groups share a name is not part of the contract.
 * Where the contract leaves a choice (which waiter of a plain mutex or semaphore, or which waiting writer, gets a
 * freed slot), the model names the candidates and how many of them must be granted, not which.
 */
import type { LockKind } from '../backend/types.js'

/** The kinds one model run uses on its lock name. */
export type KindGroup = 'mutex' | 'fair' | 'rw' | 'semaphore'

/** The kinds of each group. */
export const GROUP_KINDS: Readonly<Record<KindGroup, readonly LockKind[]>> = Object.freeze({
  mutex: ['mutex'],
  fair: ['fair'],
  rw: ['read', 'write'],
  semaphore: ['semaphore'],
})

/** One waiter, in arrival order. */
export interface ModelWaiter {
  readonly actor: string
  readonly kind: LockKind
}

/** The state of one lock name: who holds it (by kind) and who waits, oldest first. */
export interface GrantModel {
  readonly group: KindGroup
  /** The semaphore's permits (1 for the other groups). */
  readonly permits: number
  readonly holders: Map<string, LockKind>
  readonly line: ModelWaiter[]
}

/** Which waiters a release (or expiry, or leave) must now grant: `count` of `from`, any of them. */
export interface DueGrants {
  readonly count: number
  readonly from: readonly string[]
}

/** An empty lock. */
export function emptyModel(group: KindGroup, permits = 1): GrantModel {
  return { group, permits: group === 'semaphore' ? permits : 1, holders: new Map(), line: [] }
}

/**
 * Whether a newcomer (no place in line) asking for `kind` is granted now. Called only on a settled model (no
 * waiter is due), so a plain mutex or semaphore with waiters is full and the question of barging never arises.
 */
export function grantsNewcomer(model: GrantModel, kind: LockKind): boolean {
  const holders = model.holders.size
  switch (kind) {
    case 'semaphore':
      return holders < model.permits
    case 'read':
      return !hasKind(model.holders.values(), 'write') && !model.line.some((w) => w.kind === 'write')
    case 'write':
      return holders === 0 && !model.line.some((w) => w.kind === 'write')
    default:
      return holders === 0 && model.line.length === 0
  }
}

/** The waiters the rules must grant now, after something left (a release, an expiry, a waiter giving up). */
export function dueGrants(model: GrantModel): DueGrants {
  const waiting = model.line.map((w) => w.actor)
  const holders = model.holders.size
  switch (model.group) {
    case 'mutex':
    case 'semaphore':
      return { count: Math.min(Math.max(0, model.permits - holders), waiting.length), from: waiting }
    case 'fair':
      return holders === 0 && waiting.length > 0 ? { count: 1, from: waiting.slice(0, 1) } : none
    case 'rw': {
      if (hasKind(model.holders.values(), 'write')) return none
      // Any one waiting writer: writers wait before readers, but the order among writers is not promised
      // (PostgreSQL's advisory strategy keeps none).
      const writers = model.line.filter((w) => w.kind === 'write').map((w) => w.actor)
      if (writers.length > 0) return holders === 0 ? { count: 1, from: writers } : none
      return { count: waiting.length, from: waiting }
    }
  }
}

/**
 * Whether `actor` may start waiting for `kind` without making the order of grants a choice backends make
 * differently: a reader that waits before a writer is behind the writer in `decideGrant` (any waiting writer
 * blocks readers) but ahead of it in ZooKeeper's and etcd's single line, so no writer joins while readers wait.
 */
export function mayWait(model: GrantModel, kind: LockKind): boolean {
  return kind !== 'write' || !model.line.some((w) => w.kind === 'read')
}

/** Moves the granted waiters to the holders. */
export function grantWaiters(model: GrantModel, actors: readonly string[]): void {
  for (const actor of actors) {
    const at = model.line.findIndex((w) => w.actor === actor)
    const waiter = model.line[at]
    if (waiter === undefined) throw new Error(`model: ${actor} does not wait`)
    model.line.splice(at, 1)
    model.holders.set(actor, waiter.kind)
  }
}

/** Drops a waiter that gave up. */
export function leaveLine(model: GrantModel, actor: string): void {
  const at = model.line.findIndex((w) => w.actor === actor)
  if (at >= 0) model.line.splice(at, 1)
}

/**
 * The kind whose newcomer is blocked by one more holder of `kind` and granted once it has gone, when the model
 * is such that an expiring holder's going can be seen from outside; else undefined.
 */
export function expiryProbe(model: GrantModel, kind: LockKind): LockKind | undefined {
  if (model.line.length > 0) return undefined
  if (model.group === 'semaphore') return model.holders.size === model.permits - 1 ? 'semaphore' : undefined
  if (model.holders.size > 0) return undefined
  return model.group === 'rw' ? 'write' : kind
}

const none: DueGrants = Object.freeze({ count: 0, from: [] })

function hasKind(kinds: Iterable<LockKind>, kind: LockKind): boolean {
  for (const k of kinds) if (k === kind) return true
  return false
}
