/**
 * What a release script's reply says, for the release that sent it and for a late reply read after its call gave
 * up: whether the caller's lease was dropped. A grant the script made to a watcher of this process comes back in
 * the reply (scripts/handoff.lua, scripts/grant-string-mutex.lua) instead of a message, and is handed over here.
 */
import type { ReleaseNotifier } from './release-notifier.js'
import type { MutexPass, ReleaseReply } from './scripts/index.js'

/** release.lua's reply: whether the lease was dropped (handing over a grant it made here). */
export function released(notifier: ReleaseNotifier, reply: ReleaseReply): boolean {
  if (typeof reply === 'boolean') return reply
  notifier.handOver(reply)
  return true
}

/** pass-mutex.lua's reply: as {@link released}, or undefined when it did nothing (release.lua must run). */
export function passed(notifier: ReleaseNotifier, reply: MutexPass): boolean | undefined {
  if (reply === 'waited') return undefined
  if (reply === 'released' || reply === 'not-held') return reply === 'released'
  notifier.handOver(reply)
  return true
}

/**
 * `value` once the waiter of this process that a release just handed the lock to has run on to its first pause (a
 * setImmediate comes after this turn's microtasks): the new holder goes before the releaser's continuation. Both
 * continue from the one reply, and the releaser's ran first, in the same microtask queue, lengthening every handoff
 * within a process by its whole continuation (bench/redis-handoff-trace.ts: the releaser resumed between the
 * waiter's wake and its grant). The release itself is done on the server already.
 */
export function afterNewHolder<T>(value: T): Promise<T> {
  return new Promise((resolve) => setImmediate(resolve, value))
}
