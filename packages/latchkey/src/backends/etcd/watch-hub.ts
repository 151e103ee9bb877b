/**
 * Release notifications from etcd watches: one watch (deletes only) per lock name and process, shared by every
 * subscription to that name, multiplexed by etcd3 on one gRPC stream. A delete wakes only the subscriptions it
 * can unblock: readers wake on exclusive deletes; a queued fair/write waiter wakes only when the key just before
 * it goes (Go's `waitDeletes` on the predecessor), unless one of this process's tries is in flight for the name
 * and might not have recorded its predecessor yet.
 *
 * Waiting mutex acquires of one name also take turns here, oldest first: only the first (the head) has tries that
 * reach etcd, where it keeps a place in line like a fair waiter (`mutex-line.ts`); the others wait without a
 * request until the head is granted or gives up, and the next is woken. A release then costs one try per process
 * with waiters, not one per waiter, and the waiters of a process get in in the order they came.
 */
import { LocalNotifier } from '../../backend/local-notifier.js'
import type { AcquireRequest, LockKind, LockRef, ReleaseSubscription } from '../../backend/types.js'
import { monotonicNow } from '../../core/clock.js'
import type { EtcdClient, EtcdKeyValue, EtcdWatcher } from './etcd-client.js'
import { FollowedPlaces, type PlaceState } from './followed-places.js'
import { type EtcdKeyLayout, isExclusiveKind, prefixRange } from './keys.js'
import type { OwnerLease } from './leases.js'

const KINDS: readonly LockKind[] = ['mutex', 'fair', 'read', 'write', 'semaphore']
/** How long `close()` waits for etcd to confirm a watch cancellation (a dead server never does). */
const CANCEL_WAIT_MS = 1_000
/**
 * How long an unused watch stays open for the next subscription. etcd3 tears its shared watch stream down with
 * its last watcher (and resets the host's channels on that cancel), so a watch per acquire would be costly.
 */
const LINGER_MS = 5_000

interface SharedWatch {
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
  /** Places in etcd's line whose turn this watch tells (see followed-places.ts). */
  readonly places: FollowedPlaces
  /** Deletes seen under the name since the watch started (a try compares it with the count at its last miss). */
  deletes: number
  /** Monotonic ms of the last try of this process that found the name taken. */
  lastMissAt: number
  /** The mutex holder of this process for the name, while its lease lives (see {@link WatchHub.joinOnRelease}). */
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

/** A mutex held in this process: its owner, key and lease. */
export interface LocalHolder {
  readonly owner: string
  readonly key: string
  readonly lease: OwnerLease
}

/** A head's try that waits for the local holder's release to put its key in line (its request and deadline). */
export interface PendingJoin {
  readonly req: AcquireRequest
  readonly until: number
}

/** How long after a local try found the name taken it counts as contended. */
const BUSY_MS = 1_000

/** The shared watches of one backend. */
export class WatchHub {
  private readonly notifier = new LocalNotifier()
  private readonly watches = new Map<string, SharedWatch>()
  private readonly cancelling = new Set<Promise<unknown>>()
  private nextId = 0

  /**
   * `nextInLine(lockKey, owner)` runs when a followed place has one key left before it (see mutex-line.ts: its
   * lease is refreshed then, so that its grant needs no keepalive).
   */
  constructor(
    private readonly client: EtcdClient,
    private readonly layout: EtcdKeyLayout,
    private readonly nextInLine: (lockKey: string, owner: string) => void = () => undefined,
  ) {}

  /**
   * A subscription to releases of `ref`; the name's watch starts with the first one and stops with the last.
   * When `ref` carries the waiter's `owner` (the core's `AcquireRequest` does), a fair/write subscription wakes
   * only for that owner's predecessor; without it, for the predecessor of any local waiter of the name.
   */
  subscribe(ref: LockRef & { readonly owner?: string }): ReleaseSubscription {
    const prefix = this.layout.lockPrefix(ref.key)
    const watch = this.watchOf(prefix, ref.key)
    watch.subscriptions++
    clearTimeout(watch.linger)
    watch.linger = undefined
    const owner =
      (ref.kind === 'fair' || ref.kind === 'write' || ref.kind === 'mutex') && typeof ref.owner === 'string'
        ? ref.owner
        : undefined
    if (owner !== undefined && ref.kind === 'mutex') watch.mutexLine.push(owner)
    else if (owner !== undefined) watch.subscribedOwners.add(owner)
    const ringKey =
      ref.kind === 'mutex' && owner === undefined ? `${prefix}\u0000mutex\u0000${++this.nextId}` : undefined
    if (ringKey !== undefined) watch.mutexRing.push(ringKey)
    const inner = this.notifier.subscribe(
      ringKey ?? (owner === undefined ? `${prefix}\u0000${ref.kind}` : ownerKey(prefix, owner)),
    )
    let closed = false
    return {
      wait: (timeoutMs, signal) => inner.wait(timeoutMs, signal),
      close: () => {
        if (closed) return
        closed = true
        inner.close()
        if (owner !== undefined && ref.kind === 'mutex') this.leaveLine(prefix, watch, owner)
        else if (owner !== undefined) watch.subscribedOwners.delete(owner)
        if (ringKey !== undefined) watch.mutexRing.splice(watch.mutexRing.indexOf(ringKey), 1)
        if (--watch.subscriptions === 0) {
          watch.linger = setTimeout(() => this.stop(prefix, watch), LINGER_MS)
          watch.linger.unref()
        }
      },
    }
  }

  /**
   * Where a waiting mutex acquire of `owner` stands among this process's waiters of the name: `head` (its tries
   * go to etcd), `behind` (another local waiter is ahead: it waits, without a request), or `none` (not waiting:
   * a plain try).
   */
  turnOf(ref: LockRef, owner: string): 'head' | 'behind' | 'none' {
    const at = this.watches.get(this.layout.lockPrefix(ref.key))?.mutexLine.indexOf(owner) ?? -1
    return at < 0 ? 'none' : at === 0 ? 'head' : 'behind'
  }

  /**
   * Follows the place `key` that `owner` took at `revision`, with `ahead` the keys before it then: no key can join
   * ahead of it later (create revisions only grow), so once the watch has seen each of them deleted, the place is
   * first, and {@link placeOf} says so without a read. Only where the watch is known to have delivered every delete
   * since `revision`; false (not followed) otherwise.
   */
  follow(ref: LockRef, owner: string, key: string, revision: bigint, ahead: readonly string[]): boolean {
    const watch = this.watches.get(this.layout.lockPrefix(ref.key))
    return watch?.places.follow(owner, key, revision, ahead) ?? false
  }

  /**
   * Where a followed place stands: `first` (every key before it was deleted), `behind`, `gone` (deleted itself:
   * its lease ran out, or a force release), or undefined when not followed (the caller reads the line).
   */
  /** How many keys are still before `owner`'s followed place (undefined when not followed). */
  aheadOf(ref: LockRef, owner: string): number | undefined {
    return this.watches.get(this.layout.lockPrefix(ref.key))?.places.aheadOf(owner)
  }

  placeOf(ref: LockRef, owner: string): PlaceState | undefined {
    return this.watches.get(this.layout.lockPrefix(ref.key))?.places.stateOf(owner)
  }

  /** Stops following `owner`'s place. */
  unfollow(ref: LockRef, owner: string): void {
    this.watches.get(this.layout.lockPrefix(ref.key))?.places.forget(owner)
  }

  /** The head `owner` was granted: the next local waiter of the name becomes head and is woken to join etcd's line. */
  granted(ref: LockRef, owner: string): void {
    const prefix = this.layout.lockPrefix(ref.key)
    const watch = this.watches.get(prefix)
    if (watch !== undefined) this.leaveLine(prefix, watch, owner)
  }

  /** `holder` (owner, key, lease) now holds the mutex `ref` in this process. */
  holds(ref: LockRef, holder: LocalHolder): void {
    if (ref.kind !== 'mutex') return
    const watch = this.watches.get(this.layout.lockPrefix(ref.key))
    if (watch !== undefined) watch.localHolder = holder
  }

  /**
   * The head of the local mutex line `req` waits for the release of the mutex held in this process (still alive by
   * `alive`) instead of joining etcd's line now: that release txn puts its key in line too (`mutex-line.ts`,
   * `releaseAndJoin`), one raft write and one call where the head's join and the release were two of each, and
   * the head goes in line no later than it could hold the lock anyway. False (join now) when no local holder is
   * known, or `req` is not the head.
   */
  joinOnRelease(req: AcquireRequest, until: number, alive: (lease: OwnerLease) => boolean): boolean {
    const watch = this.watches.get(this.layout.lockPrefix(req.key))
    // Its key is on its way in: a join of its own would put a second one in line.
    if (watch?.joinSending === req.owner) return true
    const holder = watch?.localHolder
    if (watch === undefined || holder === undefined || watch.mutexLine[0] !== req.owner) return false
    if (holder.owner === req.owner || !alive(holder.lease)) {
      watch.localHolder = undefined
      return false
    }
    watch.joinOnRelease = { req, until }
    return true
  }

  /**
   * `owner` releases mutex `ref`: it is no longer this process's holder, and the head waiting to join with its
   * release, if any, is handed over (once) to the caller, which puts it in line or wakes it ({@link wakeOwner}).
   */
  releasing(ref: LockRef, owner: string): PendingJoin | undefined {
    if (ref.kind !== 'mutex') return undefined
    const watch = this.watches.get(this.layout.lockPrefix(ref.key))
    if (watch === undefined || watch.localHolder?.owner !== owner) return undefined
    watch.localHolder = undefined
    const join = watch.joinOnRelease
    watch.joinOnRelease = undefined
    watch.joinSending = join?.req.owner
    return join
  }

  /** The release txn carrying `owner`'s join has answered (or failed): its tries go on as usual. */
  joinSent(ref: LockRef, owner: string): void {
    const watch = this.watches.get(this.layout.lockPrefix(ref.key))
    if (watch?.joinSending === owner) watch.joinSending = undefined
  }

  /** Whether `owner` still waits for mutex `ref` in this process (it has not been granted nor given up). */
  inLine(ref: LockRef, owner: string): boolean {
    return this.watches.get(this.layout.lockPrefix(ref.key))?.mutexLine.includes(owner) ?? false
  }

  /** Wakes the waiting acquire of `owner` for `ref`'s name (a mutex or queued waiter subscribed with its owner). */
  wakeOwner(ref: LockRef, owner: string): void {
    this.notifier.notify(ownerKey(this.layout.lockPrefix(ref.key), owner))
  }

  /** Marks a try of `ref` in flight until the returned function is called. */
  tryStarted(ref: LockRef): () => void {
    const watch = this.watches.get(this.layout.lockPrefix(ref.key))
    if (watch === undefined) return () => {}
    watch.inFlight++
    return () => {
      watch.inFlight--
    }
  }

  /**
   * Deletes seen under `ref`'s name so far (undefined without a watch): a try that missed keeps it, and a later
   * try that sees the count grown knows a key went since, so the lock is likely free.
   */
  deletesSeen(ref: LockRef): number | undefined {
    return this.watches.get(this.layout.lockPrefix(ref.key))?.deletes
  }

  /** A try of `ref` found the name taken. */
  missed(ref: LockRef): void {
    const watch = this.watches.get(this.layout.lockPrefix(ref.key))
    if (watch !== undefined) watch.lastMissAt = monotonicNow()
  }

  /**
   * Whether `ref`'s name looks contended from here: other local waiters are subscribed, or a local try found it
   * taken within the last second. A first try on a contended name likely misses, so it sends no keepalive
   * beside its put (the keepalive goes after the put, should it win).
   */
  busy(ref: LockRef): boolean {
    const watch = this.watches.get(this.layout.lockPrefix(ref.key))
    if (watch === undefined) return false
    return watch.subscriptions > 1 || monotonicNow() - watch.lastMissAt < BUSY_MS
  }

  /** Records (or with `undefined`, forgets) the key a queued waiter of this process waits behind. */
  setPredecessor(ref: LockRef, owner: string, key: string | undefined): void {
    const watch = this.watches.get(this.layout.lockPrefix(ref.key))
    if (watch === undefined) return
    if (key === undefined) watch.predecessors.delete(owner)
    else watch.predecessors.set(owner, key)
  }

  /** Stops every watch; waits (boundedly) for etcd to confirm. */
  async close(): Promise<void> {
    for (const [prefix, watch] of this.watches) this.stop(prefix, watch)
    await Promise.all(this.cancelling)
  }

  private watchOf(prefix: string, lockKey: string): SharedWatch {
    const existing = this.watches.get(prefix)
    if (existing !== undefined) return existing
    const watcher = this.client.watch().inRange(prefixRange(prefix)).only('delete').watcher()
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
      foreignPermits: this.layout.foreignRanges({ key: lockKey, kind: 'semaphore' }).length > 0,
    }
    // (Re)connected: a release may have happened before the watch was in place. Wake everyone once.
    watcher.on('connected', () => {
      // The first creation: deletes after this revision all come (a broken stream resumes after the last seen).
      if (watcher.revision !== undefined) watch.places.watchFrom(BigInt(watcher.revision))
      this.wakeAll(prefix, watch)
    })
    watcher.on('delete', (kv: EtcdKeyValue) => this.onDelete(prefix, watch, kv))
    watcher.on('error', () => {
      // etcd cancelled the watch (e.g. compaction): waiters fall back to timed retries; a new one starts later.
      if (this.watches.get(prefix) === watch) this.watches.delete(prefix)
      this.wakeAll(prefix, watch)
    })
    this.watches.set(prefix, watch)
    return watch
  }

  private onDelete(prefix: string, watch: SharedWatch, kv: EtcdKeyValue): void {
    // Every process with a waiter of the name gets every delete: this path stays lean (one key string, no parse).
    const key = kv.key.toString()
    const { turned, next: nextUp } = watch.places.deleted(key, kv.mod_revision)
    if (watch.localHolder?.key === key) {
      // The local holder's key went without its release (a force release, its lease ran out): the head that waited
      // for that release is woken below like any head without a place, and joins by itself.
      watch.localHolder = undefined
      watch.joinOnRelease = undefined
    }
    for (const owner of nextUp) this.nextInLine(watch.lockKey, owner)
    if (watch.subscriptions === 0) {
      // A lingering watch (nobody waits): the usual case of an uncontended lock seeing its own releases.
      watch.deletes++
      return
    }
    const kind = this.layout.kindOf(key, watch.lockKey, prefix)
    if (kind === undefined) return
    watch.deletes++
    const wakes = watch.kindKeys
    if (kind === 'semaphore') {
      this.notifier.notify(wakes.semaphore)
      return
    }
    // Local mutex waiters are interchangeable (a mutex is not fair): one try per process and release is enough;
    // if it misses, the next release wakes the next waiter. Saves a herd of round trips per handoff.
    const next = watch.mutexRing.shift()
    if (next !== undefined) {
      watch.mutexRing.push(next)
      this.notifier.notify(next)
    }
    if (isExclusiveKind(kind)) this.notifier.notify(wakes.read)
    // A delete event carries no value: in a layout where permits wait for another program's keys, it may be one.
    if (watch.foreignPermits) this.notifier.notify(wakes.semaphore)
    // A try in flight may not have recorded its predecessor yet: then every queued waiter checks again.
    const unsure = watch.inFlight > 0
    if (unsure || watch.predecessors.size === 0 || waitedFor(watch.predecessors, key)) {
      this.notifier.notify(wakes.fair)
      this.notifier.notify(wakes.write)
    }
    for (const owner of watch.subscribedOwners) this.wakeIfDue(prefix, watch, owner, key, turned, unsure)
    // The mutex waiters behind the local head wait for their turn here, not for etcd.
    const head = watch.mutexLine[0]
    if (head !== undefined) this.wakeIfDue(prefix, watch, head, key, turned, unsure)
  }

  /** Wakes the queued waiter or local mutex head `owner` if the delete of `key` may have let it through. */
  private wakeIfDue(
    prefix: string,
    watch: SharedWatch,
    owner: string,
    key: string,
    turned: ReadonlySet<string>,
    unsure: boolean,
  ): void {
    // The head waiting for the local holder's release is woken by that release.
    if (owner === watch.joinOnRelease?.req.owner) return
    if (watch.places.has(owner)) {
      if (turned.has(owner)) this.notifier.notify(ownerKey(prefix, owner))
      return
    }
    const before = watch.predecessors.get(owner)
    if (unsure || before === undefined || before === key) this.notifier.notify(ownerKey(prefix, owner))
  }

  /** Takes `owner` out of the local mutex line; when it was the head, the next one is woken for its first try. */
  private leaveLine(prefix: string, watch: SharedWatch, owner: string): void {
    const at = watch.mutexLine.indexOf(owner)
    if (at < 0) return
    watch.mutexLine.splice(at, 1)
    if (watch.joinOnRelease?.req.owner === owner) watch.joinOnRelease = undefined
    watch.predecessors.delete(owner)
    watch.places.forget(owner)
    const next = watch.mutexLine[0]
    if (at === 0 && next !== undefined) this.notifier.notify(ownerKey(prefix, next))
  }

  private wakeAll(prefix: string, watch: SharedWatch): void {
    for (const kind of KINDS) this.notifier.notify(`${prefix}\u0000${kind}`)
    for (const owner of watch.subscribedOwners) this.notifier.notify(ownerKey(prefix, owner))
    const head = watch.mutexLine[0]
    if (head !== undefined) this.notifier.notify(ownerKey(prefix, head))
    for (const key of watch.mutexRing) this.notifier.notify(key)
  }

  private stop(prefix: string, watch: SharedWatch): void {
    clearTimeout(watch.linger)
    if (this.watches.get(prefix) !== watch) return
    this.watches.delete(prefix)
    let timer: NodeJS.Timeout | undefined
    const done = Promise.race([
      watch.watcher.cancel().catch(() => undefined),
      new Promise((resolve) => {
        timer = setTimeout(resolve, CANCEL_WAIT_MS)
        timer.unref()
      }),
    ]).finally(() => {
      clearTimeout(timer)
      this.cancelling.delete(done)
    })
    this.cancelling.add(done)
  }
}

/** Whether some local queued waiter waits behind `key`. */
function waitedFor(predecessors: ReadonlyMap<string, string>, key: string): boolean {
  for (const before of predecessors.values()) if (before === key) return true
  return false
}

function ownerKey(prefix: string, owner: string): string {
  return `${prefix}\u0000queued\u0000${owner}`
}
