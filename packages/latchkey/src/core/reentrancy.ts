/**
 * Reentrancy scoped to `withLock`'s async call tree (AsyncLocalStorage), as Redisson scopes it to a thread:
 * a nested `withLock`/`acquire` of a lock the tree already holds re-enters and counts; code outside the
 * tree (a sibling task, another request) never re-enters by accident.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { isExclusive } from '../backend/grant-rules.js'
import { UnsupportedError } from '../errors.js'
import type { LockTarget } from './context.js'
import type { Lease } from './lease.js'

/** A lease held by the current call tree and how many nested acquisitions share it. */
export interface HeldEntry {
  readonly lease: Lease
  count: number
}

const held = new AsyncLocalStorage<ReadonlyMap<string, HeldEntry>>()

/** Reentrancy identity: exclusive kinds of one name share it; read locks have their own; semaphores none. */
function identity(target: LockTarget, family: 'x' | 'r'): string {
  return `${target.ctx.id}\u0000${family}\u0000${target.key}`
}

/**
 * The entry this call tree holds for `target`, if any. A read inside a held write (or mutex) of the same name
 * re-enters the write lease (downgrade in place). An exclusive lock inside a held read would wait for itself
 * forever, so it throws instead. Semaphores never re-enter: each acquisition takes a permit.
 */
export function findHeld(target: LockTarget): HeldEntry | undefined {
  if (target.kind === 'semaphore') return undefined
  const store = held.getStore()
  if (store === undefined) return undefined
  const exclusive = store.get(identity(target, 'x'))
  if (exclusive !== undefined) return exclusive
  const read = store.get(identity(target, 'r'))
  if (read !== undefined && isExclusive(target.kind)) {
    throw new UnsupportedError(
      `Cannot take ${target.kind} lock "${target.name}" while this call tree holds its read lock: upgrading would deadlock; release the read lock first`,
      { lockName: target.name },
    )
  }
  return read
}

/** Runs `fn` with `entries` added to the call tree's held locks. */
export function runHolding<T>(entries: ReadonlyArray<readonly [LockTarget, HeldEntry]>, fn: () => T): T {
  const next = new Map(held.getStore())
  for (const [target, entry] of entries) {
    if (target.kind === 'semaphore') continue
    next.set(identity(target, isExclusive(target.kind) ? 'x' : 'r'), entry)
  }
  return held.run(next, fn)
}
