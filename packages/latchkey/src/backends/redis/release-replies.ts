/**
 * What a release script's reply says, for the release that sent it and for a late reply read after its call gave
 * up: whether the caller's lease was dropped. A grant the script made to a watcher of this process comes back in
 * the reply (scripts/handoff.lua, scripts/grant-string-mutex.lua) instead of a message, and is handed over here.
 */
import type { ReleaseNotifier } from './release-notifier.js'
import type { MutexPass, ReleaseReply } from './scripts/index.js'

/**
 * What a release script's reply says: whether the caller's lease was dropped, or `handed-over`: it was, and the
 * lock went to a waiter of this process (handed over already by the function that read the reply).
 */
export type ReleaseOutcome = boolean | 'handed-over'

/** release.lua's reply (a grant it made here is handed over). */
export function released(notifier: ReleaseNotifier, reply: ReleaseReply): ReleaseOutcome {
  if (typeof reply === 'boolean') return reply
  notifier.handOver(reply)
  return 'handed-over'
}

/** pass-mutex.lua's reply, as {@link released}; undefined when it did nothing (release.lua must run). */
export function passed(notifier: ReleaseNotifier, reply: MutexPass): ReleaseOutcome | undefined {
  if (reply === 'waited') return undefined
  if (reply === 'released' || reply === 'not-held') return reply === 'released'
  notifier.handOver(reply)
  return 'handed-over'
}

/** The release's answer to its caller: whether the lease was dropped, after the new holder's turn when it is ours. */
export function answer(outcome: ReleaseOutcome): boolean | Promise<boolean> {
  return outcome === 'handed-over' ? afterNewHolder(true) : outcome
}

/**
 * `value` once the waiter of this process that a release just handed the lock to has run on to its first pause (a
 * setImmediate comes after this turn's microtasks): the new holder goes before the releaser's continuation. Both
 * continue from the one reply, and the releaser's ran first, in the same microtask queue, lengthening every handoff
 * within a process by its whole continuation (bench/redis-handoff-trace.ts: the releaser resumed between the
 * waiter's wake and its grant). The release itself is done on the server already.
 */
function afterNewHolder<T>(value: T): Promise<T> {
  return new Promise((resolve) => setImmediate(resolve, value))
}
