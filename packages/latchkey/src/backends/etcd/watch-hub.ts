/**
 * Release notifications from etcd watches: one shared delete watch per lock name and process
 * (`shared-watch.ts`), its deletes dispatched to the subscriptions they can unblock (`delete-dispatch.ts`). The
 * hub also keeps, on each name's watch, this process's mutex waiters taking turns (`local-mutex-turns.ts`), the
 * places in etcd's line the watch follows (`followed-places.ts`), and the head that joins the line with a local
 * holder's release (`release-joins.ts`).
 */
import { LocalNotifier } from '../../backend/local-notifier.js'
import type { AcquireRequest, AcquireResult, LockRef, ReleaseSubscription } from '../../backend/types.js'
import { monotonicNow } from '../../core/clock.js'
import { dispatchDelete, wakeAll } from './delete-dispatch.js'
import type { EtcdClient } from './etcd-client.js'
import type { PlaceState } from './followed-places.js'
import type { EtcdKeyLayout } from './keys.js'
import type { OwnerLease } from './leases.js'
import { leaveTurns, turnIn } from './local-mutex-turns.js'
import {
  joinNextOnRelease,
  joinOnRelease,
  type LocalHolder,
  type PendingJoin,
  pendingJoin,
  takeJoin,
} from './release-joins.js'
import { cancelSharedWatch, LINGER_MS, openSharedWatch, ownerKey, type SharedWatch } from './shared-watch.js'

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
   * lease is refreshed then, so that its grant needs no keepalive). `takeGrant(request)` is the grant a woken
   * mutex waiter can take without a request (the subscription's `takeGrant`; none by default).
   */
  constructor(
    private readonly client: EtcdClient,
    private readonly layout: EtcdKeyLayout,
    private readonly nextInLine: (lockKey: string, owner: string) => void = () => undefined,
    private readonly takeGrant: (request: AcquireRequest) => AcquireResult | undefined = () => undefined,
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
    if (owner !== undefined && ref.kind === 'mutex') {
      watch.mutexLine.push(owner)
      if (isAcquireRequest(ref)) watch.mutexRequests.set(owner, ref)
    } else if (owner !== undefined) watch.subscribedOwners.add(owner)
    const ringKey =
      ref.kind === 'mutex' && owner === undefined ? `${prefix}\u0000mutex\u0000${++this.nextId}` : undefined
    if (ringKey !== undefined) watch.mutexRing.push(ringKey)
    const inner = this.notifier.subscribe(
      ringKey ?? (owner === undefined ? `${prefix}\u0000${ref.kind}` : ownerKey(prefix, owner)),
    )
    let closed = false
    const request = owner !== undefined && ref.kind === 'mutex' && isAcquireRequest(ref) ? ref : undefined
    return {
      wait: (timeoutMs, signal) => inner.wait(timeoutMs, signal),
      takeGrant: () => (closed || request === undefined ? undefined : this.takeGrant(request)),
      close: () => {
        if (closed) return
        closed = true
        inner.close()
        if (owner !== undefined && ref.kind === 'mutex') leaveTurns(this.notifier, prefix, watch, owner)
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
    return turnIn(this.watches.get(this.layout.lockPrefix(ref.key)), owner)
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

  /** How many keys are still before `owner`'s followed place (undefined when not followed). */
  aheadOf(ref: LockRef, owner: string): number | undefined {
    return this.watches.get(this.layout.lockPrefix(ref.key))?.places.aheadOf(owner)
  }

  /**
   * Where a followed place stands: `first` (every key before it was deleted), `behind`, `gone` (deleted itself:
   * its lease ran out, or a force release), or undefined when not followed (the caller reads the line).
   */
  placeOf(ref: LockRef, owner: string): PlaceState | undefined {
    return this.watches.get(this.layout.lockPrefix(ref.key))?.places.stateOf(owner)
  }

  /** Stops following `owner`'s place. */
  unfollow(ref: LockRef, owner: string): void {
    this.watches.get(this.layout.lockPrefix(ref.key))?.places.forget(owner)
  }

  /**
   * The head `owner` was granted (and {@link holds} the mutex): the next local waiter of the name becomes head and
   * joins etcd's line with `owner`'s release, without a try of its own (woken to try only when its request is not
   * known).
   */
  granted(ref: LockRef, owner: string): void {
    const prefix = this.layout.lockPrefix(ref.key)
    const watch = this.watches.get(prefix)
    if (watch !== undefined)
      leaveTurns(this.notifier, prefix, watch, owner, (next) => joinNextOnRelease(watch, owner, next))
  }

  /** The join waiting for the release of this process's holder of the mutex `ref`, and that holder's owner. */
  pendingJoin(ref: LockRef): { holder: string; join: PendingJoin } | undefined {
    return ref.kind === 'mutex' ? pendingJoin(this.watches.get(this.layout.lockPrefix(ref.key))) : undefined
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
    return joinOnRelease(this.watches.get(this.layout.lockPrefix(req.key)), req, until, alive)
  }

  /**
   * `owner` releases mutex `ref`: it is no longer this process's holder, and the head waiting to join with its
   * release, if any, is handed over (once) to the caller, which puts it in line or wakes it ({@link wakeOwner}).
   */
  releasing(ref: LockRef, owner: string): PendingJoin | undefined {
    if (ref.kind !== 'mutex') return undefined
    return takeJoin(this.watches.get(this.layout.lockPrefix(ref.key)), owner)
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
    const dispatch = { notifier: this.notifier, layout: this.layout, nextInLine: this.nextInLine }
    const watch = openSharedWatch(this.client, this.layout, prefix, lockKey, {
      deleted: (w, kv) => dispatchDelete(dispatch, prefix, w, kv),
      wakeAll: (w) => wakeAll(this.notifier, prefix, w),
      failed: (w) => {
        if (this.watches.get(prefix) === w) this.watches.delete(prefix)
      },
    })
    this.watches.set(prefix, watch)
    return watch
  }

  private stop(prefix: string, watch: SharedWatch): void {
    clearTimeout(watch.linger)
    if (this.watches.get(prefix) !== watch) return
    this.watches.delete(prefix)
    const done = cancelSharedWatch(watch).finally(() => this.cancelling.delete(done))
    this.cancelling.add(done)
  }
}

/** Whether a subscription's `ref` is the acquire request itself (as the core passes it: `Backend.subscribe`). */
function isAcquireRequest(ref: LockRef & { readonly owner?: string }): ref is AcquireRequest {
  return typeof (ref as Partial<AcquireRequest>).ttlMs === 'number' && typeof ref.owner === 'string'
}
