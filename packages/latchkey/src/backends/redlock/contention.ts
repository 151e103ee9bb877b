/**
 * Which of a process's waiters for a lock asks the nodes, and when it need not: only the longest-waiting one (the
 * head), and not while the holder its process's last round found goes on blocking it. A split round's leader that
 * this process stands back for counts as such a holder until it is gone.
 */
import type { RedlockChannel, RedlockSubscription } from './redlock-subscription.js'

/**
 * At most this long between two rounds of one process for one lock while its waiters sleep: the bound on what a
 * release message lost on every node (subscriber connections reconnecting) can cost, since the waiters of a
 * process that were not woken skip their fallback tries in between.
 */
export const POLL_EVERY_MS = 1_000

/**
 * For a try of `sub` that no release woke (its first, or a fallback timer's): how long it should wait instead of
 * asking the nodes, or undefined (make the round). Only the process's longest-waiting waiter of the lock (the
 * head) contends: the others wait behind it and are woken one by one, each when the one before it has got the lock
 * and released it (or left). Were they to make rounds on their own timers (their first try, a fallback), a
 * process's hundreds of sleepers would contend with each other and with the other processes' heads, and every
 * split vote among them clears what the process knows of the holder, so the next timers all go to the nodes too
 * (measured: 10 rounds per acquisition at 1,000 waiters in 4 processes). The head itself skips the round while the
 * holder its process's last round found goes on blocking it: that holder's release has not been announced and
 * this process asked the nodes less than {@link POLL_EVERY_MS} ago.
 */
export function blockedFor(sub: RedlockSubscription, now: number): number | undefined {
  const group = sub.channel
  if (sub.owesTry || sub.retrying) return undefined
  if (group.subs.values().next().value !== sub) return POLL_EVERY_MS
  const blocked = group.blocked
  if (group.subscribedAt === undefined || blocked === undefined) return undefined
  if (now >= blocked.until || now - group.polledAt >= POLL_EVERY_MS) return undefined
  if (group.releases.has(blocked.holder)) return undefined
  return blocked.until - now
}

/**
 * Whether `owner`, a split round's leader, is to be ignored on `group` (the lock's channel, if subscribed):
 * announced released, or led for longer than {@link POLL_EVERY_MS} without winning (its process died or its view
 * differs), so a dead leader's minority of keys does not hold everyone back until it expires.
 */
export function isGone(group: RedlockChannel | undefined, owner: string, now: number): boolean {
  if (group === undefined) return false
  if (group.releases.has(owner)) return true
  return group.leader?.owner === owner && now - group.leader.since >= POLL_EVERY_MS
}

/** Records that this process stands back for the split round's leader `owner`. */
export function standBack(sub: RedlockSubscription, owner: string, now: number): void {
  const group = sub.channel
  if (group.leader?.owner !== owner) group.leader = { owner, since: now }
}

/** Records a round of `sub` sent at `sentAt`: found `holder` holding until `until`, or nobody (undefined). */
export function polled(sub: RedlockSubscription, sentAt: number, holder: string | undefined, until: number): void {
  const group = sub.channel
  group.polledAt = Math.max(group.polledAt, sentAt)
  // Recorded even before the SUBSCRIBE is acknowledged (each acknowledgement wakes a waiter, whose round then
  // refreshes it), but used only after: see blockedFor.
  group.blocked = holder === undefined ? undefined : { holder, until }
}
