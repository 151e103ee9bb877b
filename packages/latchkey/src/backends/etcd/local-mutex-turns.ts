/**
 * Waiting mutex acquires of one name in this process take turns, oldest first: only the first (the head) has tries
 * that reach etcd, where it keeps a place in line like a fair waiter (`mutex-line.ts`); the others wait without a
 * request until the head is granted or gives up, and the next is woken. A release then costs one try per process
 * with waiters, not one per waiter, and the waiters of a process get in in the order they came.
 */
import type { LocalNotifier } from '../../backend/local-notifier.js'
import { ownerKey, type SharedWatch } from './shared-watch.js'

/** Where a waiting mutex acquire of `owner` stands among this process's waiters of the name. */
export function turnIn(watch: SharedWatch | undefined, owner: string): 'head' | 'behind' | 'none' {
  const at = watch?.mutexLine.indexOf(owner) ?? -1
  return at < 0 ? 'none' : at === 0 ? 'head' : 'behind'
}

/**
 * Takes `owner` out of the local mutex line; when it was the head, the next one is woken for its first try, unless
 * `joinNext(next)` has put it in line otherwise (it waits for the release of `owner`, granted: see release-joins.ts).
 */
export function leaveTurns(
  notifier: LocalNotifier,
  prefix: string,
  watch: SharedWatch,
  owner: string,
  joinNext?: (next: string) => boolean,
): void {
  const at = watch.mutexLine.indexOf(owner)
  if (at < 0) return
  watch.mutexLine.splice(at, 1)
  watch.mutexRequests.delete(owner)
  if (watch.joinOnRelease?.req.owner === owner) watch.joinOnRelease = undefined
  watch.predecessors.delete(owner)
  watch.places.forget(owner)
  const next = watch.mutexLine[0]
  if (at === 0 && next !== undefined && joinNext?.(next) !== true) notifier.notify(ownerKey(prefix, next))
}
