/**
 * A release handing the lock to a waiter of its own process (no process to wake), in runs of a bounded length so
 * that the other processes' waiters get their turn, as in cohort locks.
 */
import type { RedlockChannel, RedlockSubscription } from './redlock-subscription.js'

/**
 * How many times in a row a release may hand the lock to a waiter of its own process (one round, no process to
 * wake) before one goes to the line of the other processes (see localSuccessor). Handing the lock to another
 * process costs a wake-up of that process, which on a busy host waits for a CPU; handing it on at home does not. A
 * batch bounds how long the other processes wait, as in cohort locks.
 */
// 64, not 16, since a handover at home is passed on at once (no round to wait for): with 1,000 waiters in 4
// processes, 9 alternating runs of each in the same invocations, 64 made 332-720 acq/s (median 467), 16 made 219-667
// (median 420), no waiter starved in either; the rest of a handover to another process is the wake-up of that process.
const LOCAL_RUN = 64

/**
 * The waiter a release of this process may hand the lock to, on `group` (the lock's channel, if subscribed): the
 * local head, while no round of its own is out, and while the process has not handed the lock on locally
 * {@link LOCAL_RUN} times in a row (then the release goes to the line, so that the other processes' waiters get
 * their turn).
 */
export function localSuccessor(group: RedlockChannel | undefined): RedlockSubscription | undefined {
  const head = group?.subs.values().next().value
  if (group === undefined || head === undefined || head.closed || head.inRound || head.ttlMs === undefined) return
  if (head.handedAt !== undefined || group.localRun >= LOCAL_RUN) {
    if (group.localRun >= LOCAL_RUN) group.localRun = 0
    return undefined
  }
  group.localRun++
  return head
}

/**
 * The waiter behind `sub` in this process, if a release handing `sub` the lock may also place it in line (it has
 * no place yet and no round out): it is the head once `sub` has the lock, and a head in line needs no round of its
 * own while the lock is held (see RedlockNotifier.detach).
 */
export function followerOf(sub: RedlockSubscription): RedlockSubscription | undefined {
  let seen = false
  for (const s of sub.channel.subs) {
    if (seen) return s.closed || s.inRound || s.ticket !== undefined || s.ttlMs === undefined ? undefined : s
    seen = s === sub
  }
  return undefined
}

/** A release of this process handed `sub` the lock on a quorum of nodes, sent at `sentAt`: wakes it to take it. */
export function handOver(sub: RedlockSubscription, sentAt: number): void {
  sub.handedAt = sentAt
  sub.fire()
}
