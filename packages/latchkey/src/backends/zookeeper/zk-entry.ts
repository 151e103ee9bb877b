/**
 * What the backend remembers about one owner (one lease attempt) between calls: its lock, its session, and where
 * its node is in its life, as one state (`NodeState`) rather than flags that must agree.
 */
import type { LockKind } from '../../backend/types.js'
import type { ZkConnection } from './zk-connection.js'
import type { ZkLayout } from './zk-layout.js'
import type { ZkSubscription } from './zk-subscription.js'

/** Server time (ms) of the last grant or renewal, and the TTL then written. */
export interface WrittenLease {
  readonly mtime: number
  readonly ttlMs: number
}

/**
 * Where an owner's node is. `none` -> `unsure` (a create sent) -> `waiting` (in line) -> `held`; back to `none`
 * when our node is deleted behind our back (forceRelease): the next try takes a new place in line.
 */
export type NodeState =
  /** No node: before the first create, or after ours was deleted. */
  | { readonly is: 'none' }
  /** A create was sent whose outcome we did not learn: the node may exist under our `_c_<owner>-` prefix. */
  | { readonly is: 'unsure' }
  | {
      readonly is: 'waiting'
      readonly name: string
      /** The node's data holds a lease (it was created with one, or written by a try): empty it to wait. */
      dataLeased: boolean
      /** Our watch wakes us on a data change of the node ahead too (a semaphore's predecessor leaving). */
      wakeOnChange: boolean
      /** A watch woke us since the last try (so the next try is likely to be granted). */
      woken: boolean
      /** The node's czxid (its fencing token), when its create answered with its stat (CREATE2). */
      readonly czxid?: Buffer | undefined
      /** The lease the node was created with, when its create answered with its stat (see {@link CreatedLease}). */
      readonly created?: CreatedLease | undefined
      /** Empties the node's data before the lease it was created with grows old (see `zk-young-lease.ts`). */
      emptyTimer?: NodeJS.Timeout | undefined
      /** The line, listed as soon as the node ahead was deleted (`ZkWaiters.listAhead`), for the next try. */
      listing?: Promise<string[]> | undefined
      /** The watched node whose deletion alone makes ours first (zk-first-in-line.ts), from the last listing. */
      firstAfter?: string | undefined
      /** `ZkConnection.connects` when `firstAfter` was set: a deletion event after a reconnect does not count. */
      firstOn?: number
      /** That node's deletion woke us: the next try is granted without a listing. */
      first?: boolean
      /** Our own node is watched for its deletion (zk-first-in-line.ts): `firstAfter` may be set. */
      ownWatched?: boolean
      /** The node two ahead of ours, watched: its deletion moves us up without waking the core (zk-first-in-line.ts). */
      twoAhead?: string | undefined
      /** The node just ahead of ours when `twoAhead` was set: the holder once that one goes (`ZkWaiters.moveUp`). */
      ahead?: string | undefined
      /** Wakes the core when the holder's lease could run out, set by a move up without a try (`ZkWaiters.moveUp`). */
      judgeTimer?: NodeJS.Timeout | undefined
    }
  | {
      readonly is: 'held'
      readonly name: string
      lease: WrittenLease
      /** Set by `watchLease`: called once when the lease is lost behind the holder's back. */
      onLeaseLost: ((reason: string) => void) | undefined
      /** Why the lease was lost before `watchLease` was called (a check that answered first): told to it then. */
      lost?: string | undefined
      /** Granted on the deletion event, with no listing: checked against one if it lives (zk-first-in-line.ts). */
      unconfirmed?: boolean
    }

/**
 * Curator's semaphore takes a lease while holding the recipe's internal mutex: that mutex's node, in `parent`.
 * `name` is unknown before its create answers (and after a lost reply, until found by its prefix: `unsure`).
 */
export interface GateState {
  readonly parent: string
  name: string | undefined
  unsure: boolean
}

/** One lease attempt's node: from its first `tryAcquire` to its release, leaveQueue or session loss. */
export interface OwnerEntry {
  readonly owner: string
  /** `stateKey` of the lock: semaphores live apart from the mutex / read-write family. */
  readonly key: string
  readonly kind: LockKind
  /** A semaphore's permit count, written into its node's name. */
  readonly permits: number
  /** Path of the lock node (the parent of the owner's node). */
  readonly parent: string
  /** How nodes are named and lines sorted. */
  readonly layout: ZkLayout
  /** Curator's semaphore only: the internal mutex held while taking a lease. */
  readonly gate: GateState | undefined
  readonly conn: ZkConnection
  node: NodeState
  sub: ZkSubscription | undefined
  /** Set when the core gave the wait up (its subscription closed, or leaveQueue): the entry was dropped then. */
  givenUp: boolean
  /** Child names this entry has a live watch on (kept across states: a watch outlives the try that set it). */
  readonly watching: Set<string>
}

/**
 * A lease written by the node's create: `mtime` its start by the server's clock, `sentAt` the monotonic instant
 * (`performance.now()`) the create was sent, no later than that start, `ttlMs` the TTL it was written with.
 */
export interface CreatedLease {
  readonly sentAt: number
  readonly ttlMs: number
  readonly mtime: number
}

/** A node in line, not yet granted. */
export type WaitingNode = Extract<NodeState, { is: 'waiting' }>

/** An entry whose node holds the lease. */
export type HeldEntry = OwnerEntry & { node: Extract<NodeState, { is: 'held' }> }

/** The state before the first create. */
export const NO_NODE: NodeState = Object.freeze({ is: 'none' })

/** A node just created (or found by its prefix), in line with the lease it was created with. */
export function waitingNode(name: string, czxid?: Buffer, dataLeased = true, created?: CreatedLease): NodeState {
  return { is: 'waiting', name, dataLeased, wakeOnChange: false, woken: false, czxid, created }
}

/** The owner's child name, when it has a node we know of. */
export function nameOf(entry: OwnerEntry): string | undefined {
  const { node } = entry
  return node.is === 'waiting' || node.is === 'held' ? node.name : undefined
}

/** Tells a holder's `watchLease` listener, once, that its lease is gone. */
export function leaseLost(entry: OwnerEntry, reason: string): void {
  const { node } = entry
  if (node.is !== 'held') return
  const listener = node.onLeaseLost
  node.onLeaseLost = undefined
  if (listener === undefined) node.lost ??= reason
  else listener(reason)
}
