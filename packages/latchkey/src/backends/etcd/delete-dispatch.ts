/**
 * Dispatch of one name's deletes to the subscriptions they can unblock: readers wake on exclusive deletes; a
 * queued fair/write waiter wakes only when the key just before it goes (Go's `waitDeletes` on the predecessor),
 * unless one of this process's tries is in flight for the name and might not have recorded its predecessor yet;
 * local mutex waiters wake one per delete, in rotation, and the local mutex head when its turn may have come.
 */
import type { LocalNotifier } from '../../backend/local-notifier.js'
import type { LockKind } from '../../backend/types.js'
import type { EtcdKeyValue } from './etcd-client.js'
import { type EtcdKeyLayout, isExclusiveKind } from './keys.js'
import { holderKeyGone } from './release-joins.js'
import { ownerKey, type SharedWatch } from './shared-watch.js'

const KINDS: readonly LockKind[] = ['mutex', 'fair', 'read', 'write', 'semaphore']

/** What a delete dispatch needs from its hub. */
export interface DispatchDeps {
  readonly notifier: LocalNotifier
  readonly layout: EtcdKeyLayout
  /** Runs when a followed place has one key left before it (see `WatchHub`). */
  readonly nextInLine: (lockKey: string, owner: string) => void
}

/** Wakes the subscriptions of the name under `prefix` that the delete `kv` may let through. */
export function dispatchDelete(d: DispatchDeps, prefix: string, watch: SharedWatch, kv: EtcdKeyValue): void {
  // Every process with a waiter of the name gets every delete: this path stays lean (one key string, no parse).
  const key = kv.key.toString()
  const { turned, next: nextUp } = watch.places.deleted(key, kv.mod_revision)
  holderKeyGone(watch, key)
  for (const owner of nextUp) d.nextInLine(watch.lockKey, owner)
  if (watch.subscriptions === 0) {
    // A lingering watch (nobody waits): the usual case of an uncontended lock seeing its own releases.
    watch.deletes++
    return
  }
  const kind = d.layout.kindOf(key, watch.lockKey, prefix)
  if (kind === undefined) return
  watch.deletes++
  const { notifier } = d
  const wakes = watch.kindKeys
  if (kind === 'semaphore') {
    notifier.notify(wakes.semaphore)
    return
  }
  // Local mutex waiters are interchangeable (a mutex is not fair): one try per process and release is enough;
  // if it misses, the next release wakes the next waiter. Saves a herd of round trips per handoff.
  const next = watch.mutexRing.shift()
  if (next !== undefined) {
    watch.mutexRing.push(next)
    notifier.notify(next)
  }
  if (isExclusiveKind(kind)) notifier.notify(wakes.read)
  // A delete event carries no value: in a layout where permits wait for another program's keys, it may be one.
  if (watch.foreignPermits) notifier.notify(wakes.semaphore)
  // A try in flight may not have recorded its predecessor yet: then every queued waiter checks again.
  const unsure = watch.inFlight > 0
  if (unsure || watch.predecessors.size === 0 || waitedFor(watch.predecessors, key)) {
    notifier.notify(wakes.fair)
    notifier.notify(wakes.write)
  }
  for (const owner of watch.subscribedOwners) wakeIfDue(notifier, prefix, watch, owner, key, turned, unsure)
  // The mutex waiters behind the local head wait for their turn here, not for etcd.
  const head = watch.mutexLine[0]
  if (head !== undefined) wakeIfDue(notifier, prefix, watch, head, key, turned, unsure)
}

/** Wakes every subscription of the name under `prefix` once. */
export function wakeAll(notifier: LocalNotifier, prefix: string, watch: SharedWatch): void {
  for (const kind of KINDS) notifier.notify(`${prefix}\u0000${kind}`)
  for (const owner of watch.subscribedOwners) notifier.notify(ownerKey(prefix, owner))
  const head = watch.mutexLine[0]
  if (head !== undefined) notifier.notify(ownerKey(prefix, head))
  for (const key of watch.mutexRing) notifier.notify(key)
}

/** Wakes the queued waiter or local mutex head `owner` if the delete of `key` may have let it through. */
function wakeIfDue(
  notifier: LocalNotifier,
  prefix: string,
  watch: SharedWatch,
  owner: string,
  key: string,
  turned: ReadonlySet<string>,
  unsure: boolean,
): void {
  // The head waiting for the local holder's release is woken by that release; once that release txn carries its
  // key, by the txn's answer (releaseAndJoin wakes it unless the watch follows its place behind a key). The delete
  // of the holder's own key often comes before that answer: a wake-up then was latched, and cost the head a try
  // and a keepalive for nothing (0.77 keepalives per acquisition at 10 waiters over 4 processes).
  if (owner === watch.joinOnRelease?.req.owner || owner === watch.joinSending) return
  if (watch.places.has(owner)) {
    if (turned.has(owner)) notifier.notify(ownerKey(prefix, owner))
    return
  }
  const before = watch.predecessors.get(owner)
  if (unsure || before === undefined || before === key) notifier.notify(ownerKey(prefix, owner))
}

/** Whether some local queued waiter waits behind `key`. */
function waitedFor(predecessors: ReadonlyMap<string, string>, key: string): boolean {
  for (const before of predecessors.values()) if (before === key) return true
  return false
}
