/** One lock a session strategy holds: the pool connection pinned for it, and how its loss is watched and told. */
import { stateKey } from '../../backend/grant-rules.js'
import type { LockRef } from '../../backend/types.js'

/** What the base needs of a pinned connection: both mysql2 connections and pg clients report their death this way. */
export interface SessionConnection {
  on(event: 'error' | 'end', listener: (...args: unknown[]) => void): unknown
  removeListener(event: 'error' | 'end', listener: (...args: unknown[]) => void): unknown
}

/** One held session lock. */
export interface SessionHold<C> {
  /** `stateKey` and owner: the map key. */
  readonly id: string
  readonly key: string
  readonly owner: string
  readonly kind: LockRef['kind']
  readonly connection: C
  /** What the strategy needs to free the lock (names, hashed keys, ...). */
  readonly detail: string
  readonly token: bigint
  /** Whether the connection has not reported an error or end since the lock was taken. */
  alive: boolean
  timer: NodeJS.Timeout | undefined
  unwatch: () => void
  /** The core's `watchLease` listener, called once when the connection ends. */
  onLost: ((reason: string) => void) | undefined
}

/** The id of `ref`'s hold: its `stateKey` and owner. */
export function holdId(ref: { readonly key: string; readonly kind: LockRef['kind']; readonly owner: string }): string {
  return `${stateKey(ref)}\u0000${ref.owner}`
}
