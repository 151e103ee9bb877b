/**
 * One name's delete watch in this process, shared by every subscription to the name (etcd3 multiplexes the
 * watches of a client on one gRPC stream), and the state its subscriptions keep on it. It opens with the first
 * subscription, lingers after the last, wakes every waiter when it (re)connects or etcd cancels it, and on
 * `close()` waits boundedly for etcd to confirm its cancellation.
 */
import type { AcquireRequest, LockKind } from '../../backend/types.js'
import type { EtcdClient, EtcdKeyValue, EtcdWatcher } from './etcd-client.js'
import { FollowedPlaces } from './followed-places.js'
import { type EtcdKeyLayout, prefixRange } from './keys.js'
import type { LocalHolder, PendingJoin } from './release-joins.js'

/** How long `close()` waits for etcd to confirm a watch cancellation (a dead server never does). */
const CANCEL_WAIT_MS = 1_000
/**
 * How long an unused watch stays open for the next subscription. etcd3 tears its shared watch stream down with
 * its last watcher (and resets the host's channels on that cancel), so a watch per acquire would be costly.
 */
export const LINGER_MS = 5_000

export interface SharedWatch {
  /** The lock key (namespaced name) watched. */
  readonly lockKey: string
  readonly watcher: EtcdWatcher
  subscriptions: number
  linger: NodeJS.Timeout | undefined
  /** Tries of this process in flight for the name (their predecessor is not known yet). */
  inFlight: number
  /** Owner -> key of the waiter's predecessor, for queued (fair/write) waiters of this process. */
  readonly predecessors: Map<string, string>
  /** Owners whose subscription is their own (fair/write subscriptions opened with the request's owner). */
  readonly subscribedOwners: Set<string>
  /** Notifier keys of this process's mutex subscriptions without an owner, in wake-up rotation. */
  readonly mutexRing: string[]
  /** Owners of this process's waiting mutex acquires, oldest first: only the first has tries that reach etcd. */
  readonly mutexLine: string[]
  /** The acquire requests of the owners in `mutexLine` (the core subscribes with the request itself). */
  readonly mutexRequests: Map<string, AcquireRequest>
  /** Places in etcd's line whose turn this watch tells (see followed-places.ts). */
  readonly places: FollowedPlaces
  /** Deletes seen under the name since the watch started (a try compares it with the count at its last miss). */
  deletes: number
  /** Monotonic ms of the last try of this process that found the name taken. */
  lastMissAt: number
  /** The mutex holder of this process for the name, while its lease lives (see release-joins.ts). */
  localHolder: LocalHolder | undefined
  /** The head of the local mutex line, waiting to be put in etcd's line by the local holder's release txn. */
  joinOnRelease: PendingJoin | undefined
  /** The owner whose key that release txn is putting in line now (its own tries wait for the answer). */
  joinSending: string | undefined
  /** The notifier key of each kind's subscriptions without an owner (built once, used on every delete). */
  readonly kindKeys: Readonly<Record<LockKind, string>>
  /** Whether permits of the name wait for another program's keys (`EtcdKeyLayout.foreignRanges`). */
  readonly foreignPermits: boolean
}

/** What a shared watch reports to its hub. */
export interface SharedWatchEvents {
  /** A key under the name was deleted. */
  readonly deleted: (watch: SharedWatch, kv: EtcdKeyValue) => void
  /** Every waiter of the name should check again (the watch (re)connected, or etcd cancelled it). */
  readonly wakeAll: (watch: SharedWatch) => void
  /** etcd cancelled the watch: the hub drops it (a new one starts with the next subscription). */
  readonly failed: (watch: SharedWatch) => void
}

/** Opens the delete watch of the name `lockKey` (keys under `prefix`). */
export function openSharedWatch(
  client: EtcdClient,
  layout: EtcdKeyLayout,
  prefix: string,
  lockKey: string,
  events: SharedWatchEvents,
): SharedWatch {
  const watcher = client.watch().inRange(prefixRange(prefix)).only('delete').watcher()
  const watch: SharedWatch = {
    lockKey,
    watcher,
    subscriptions: 0,
    linger: undefined,
    inFlight: 0,
    predecessors: new Map(),
    subscribedOwners: new Set(),
    mutexRing: [],
    mutexLine: [],
    mutexRequests: new Map(),
    places: new FollowedPlaces(),
    deletes: 0,
    lastMissAt: Number.NEGATIVE_INFINITY,
    localHolder: undefined,
    joinOnRelease: undefined,
    joinSending: undefined,
    kindKeys: {
      mutex: `${prefix}\u0000mutex`,
      fair: `${prefix}\u0000fair`,
      read: `${prefix}\u0000read`,
      write: `${prefix}\u0000write`,
      semaphore: `${prefix}\u0000semaphore`,
    },
    foreignPermits: layout.foreignRanges({ key: lockKey, kind: 'semaphore' }).length > 0,
  }
  // (Re)connected: a release may have happened before the watch was in place. Wake everyone once.
  watcher.on('connected', () => {
    // The first creation: deletes after this revision all come (a broken stream resumes after the last seen).
    if (watcher.revision !== undefined) watch.places.watchFrom(BigInt(watcher.revision))
    events.wakeAll(watch)
  })
  watcher.on('delete', (kv: EtcdKeyValue) => events.deleted(watch, kv))
  watcher.on('error', () => {
    // etcd cancelled the watch (e.g. compaction): waiters fall back to timed retries; a new one starts later.
    events.failed(watch)
    events.wakeAll(watch)
  })
  return watch
}

/** Cancels `watch`; the promise settles when etcd confirms, or after {@link CANCEL_WAIT_MS} (it never rejects). */
export function cancelSharedWatch(watch: SharedWatch): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    watch.watcher.cancel().catch(() => undefined),
    new Promise((resolve) => {
      timer = setTimeout(resolve, CANCEL_WAIT_MS)
      timer.unref()
    }),
  ]).finally(() => clearTimeout(timer))
}

/** The notifier key of the waiter `owner` of the name under `prefix` (a mutex or queued waiter with its owner). */
export function ownerKey(prefix: string, owner: string): string {
  return `${prefix}\u0000queued\u0000${owner}`
}
