/**
 * Line joins on release: the head of this process's waiting mutex acquires of a name, behind a holder of the same
 * process, waits for that holder's release instead of joining etcd's line by itself. The release txn puts its key
 * in line too (`mutex-release-join.ts`, `releaseAndJoin`): one raft write and one call where the head's join and the
 * release were two of each, and the head goes in line no later than it could hold the lock anyway.
 */
import type { AcquireRequest } from '../../backend/types.js'
import { monotonicNow } from '../../core/clock.js'
import type { EtcdTxnResponse } from './etcd-client.js'
import type { OwnerLease } from './leases.js'
import type { KeyedOwner } from './owners.js'
import type { SharedWatch } from './shared-watch.js'

/** A mutex held in this process: its owner, key and lease. */
export interface LocalHolder {
  readonly owner: string
  readonly key: string
  readonly lease: OwnerLease
}

/**
 * A head's try that waits for the local holder's release to put its key in line (its request and deadline), and
 * that release's txn once it is built ahead of the release (`mutex-release-join.ts`, `prepareRelease`).
 */
export interface PendingJoin {
  readonly req: AcquireRequest
  readonly until: number
  prepared?: PreparedRelease
}

/**
 * The release txn of `holder` that puts the head's `key` in line on the holder's own lease, encoded during the hold:
 * the release then only sends it. Built for that holder state only (a holder's state is set once, at its grant).
 */
export interface PreparedRelease {
  readonly holder: KeyedOwner
  readonly key: string
  readonly send: () => Promise<EtcdTxnResponse>
}

/**
 * Whether the head `req` waits for the release of the local holder (still alive by `alive`) to join; false (join
 * now) when no local holder is known, or `req` is not the head.
 */
export function joinOnRelease(
  watch: SharedWatch | undefined,
  req: AcquireRequest,
  until: number,
  alive: (lease: OwnerLease) => boolean,
): boolean {
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
 * The head `owner` was just granted the mutex (and is this process's holder): `next`, the new head, is to join the
 * line with its release. Where its try would only have found that holder and waited for it, the join is set here,
 * without waking it (a try per acquisition saved); false when `next`'s request is not known (it is woken to try).
 */
export function joinNextOnRelease(watch: SharedWatch, owner: string, next: string): boolean {
  const req = watch.mutexRequests.get(next)
  if (req === undefined || watch.localHolder?.owner !== owner) return false
  // Its place's lease must outlive its next try; that try comes within a third of its TTL (etcd-backend.ts).
  watch.joinOnRelease = { req, until: monotonicNow() + req.ttlMs }
  return true
}

/** The join waiting for the local holder's release, if any, and that holder's owner (not handed over yet). */
export function pendingJoin(watch: SharedWatch | undefined): { holder: string; join: PendingJoin } | undefined {
  const holder = watch?.localHolder
  const join = watch?.joinOnRelease
  return holder === undefined || join === undefined ? undefined : { holder: holder.owner, join }
}

/** `owner` releases the mutex: the head waiting to join with its release, if any, is handed over (once). */
export function takeJoin(watch: SharedWatch | undefined, owner: string): PendingJoin | undefined {
  if (watch === undefined || watch.localHolder?.owner !== owner) return undefined
  watch.localHolder = undefined
  const join = watch.joinOnRelease
  watch.joinOnRelease = undefined
  watch.joinSending = join?.req.owner
  return join
}

/** The local holder's key `key` was deleted: if it went without its release, nobody joins with that release. */
export function holderKeyGone(watch: SharedWatch, key: string): void {
  if (watch.localHolder?.key !== key) return
  // The local holder's key went without its release (a force release, its lease ran out): the head that waited
  // for that release is woken by the delete (delete-dispatch.ts) like any head without a place, and joins by itself.
  watch.localHolder = undefined
  watch.joinOnRelease = undefined
}
