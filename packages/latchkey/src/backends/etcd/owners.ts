/**
 * What this process knows about each owner id it has seen: its lease and, once it has one, its key.
 * `probe`: tried and missed, keeps its lease for the next try (no key). `waiter`: has a place in line (a key
 * on a short lease, fair/write only). `holder`: holds the lock with the key whose create revision is its token.
 */
import type { LockKind } from '../../backend/types.js'
import type { EtcdCompare } from './etcd-client.js'
import type { OwnerLease } from './leases.js'

/** One owner's state. */
export type OwnerState =
  | {
      readonly role: 'probe'
      readonly lockKey: string
      readonly kind: LockKind
      readonly lease: OwnerLease
      /** The name's delete count (`WatchHub.deletesSeen`) when this owner's try last missed. */
      deletesSeen?: number | undefined
    }
  | {
      readonly role: 'waiter' | 'holder'
      readonly lockKey: string
      readonly kind: LockKind
      lease: OwnerLease
      readonly key: string
      readonly revision: bigint
    }

/** A state with a key. */
export type KeyedOwner = Extract<OwnerState, { role: 'waiter' | 'holder' }>

/** The txn guard "this key still has create revision `revision`": the key exists and was never re-created. */
export function createdAt(key: string, revision: bigint): EtcdCompare {
  return { key: Buffer.from(key), target: 'Create', result: 'Equal', create_revision: revision.toString() }
}

/** How often stale probes are dropped. */
const PRUNE_EVERY_MS = 1_000

/** The owner table of one backend. */
export class Owners {
  private readonly table = new Map<string, OwnerState>()
  private lastPrune = 0

  get(owner: string, lockKey: string, kind: LockKind): OwnerState | undefined {
    const state = this.table.get(owner)
    return state !== undefined && state.lockKey === lockKey && state.kind === kind ? state : undefined
  }

  set(owner: string, state: OwnerState): void {
    this.table.set(owner, state)
  }

  delete(owner: string): void {
    this.table.delete(owner)
  }

  /** The local holder whose key has create revision `token`, if any. */
  holderByToken(lockKey: string, kind: LockKind, token: bigint): KeyedOwner | undefined {
    for (const state of this.table.values()) {
      if (state.role === 'holder' && state.lockKey === lockKey && state.kind === kind && state.revision === token)
        return state
    }
    return undefined
  }

  /**
   * Drops probes whose lease has run out: the core gives no signal when a non-queued waiter gives up, and
   * their leases carry no key, so they simply expire on the server.
   */
  prune(now: number, remainingMs: (lease: OwnerLease) => number): void {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return
    this.lastPrune = now
    for (const [owner, state] of this.table) {
      if (state.role === 'probe' && remainingMs(state.lease) < 0) this.table.delete(owner)
    }
  }

  clear(): void {
    this.table.clear()
  }
}
