/**
 * This process's waiters in the nodes' lines (line-keys.ts, scripts/place.lua): a waiting head takes a place with
 * a ticket, so that a release hands it the lock; the waiter behind a new holder is placed while the lock is held; a
 * waiter that gives up leaves the line and gives back what keys it has.
 */
import type { AcquireRequest, HolderRef } from '../../backend/types.js'
import { fanOut, type Vote } from './fan-out.js'
import { lineKeys } from './line-keys.js'
import { followerOf } from './local-successor.js'
import type { RedlockContext } from './redlock-context.js'
import type { RedlockSubscription } from './redlock-subscription.js'
import { PLACE, RELEASE } from './scripts/index.js'

/**
 * How long a waiting head's place in line lasts on a node unless one of its rounds renews it. Its rounds come at
 * least every 2 s (the core's fallback pause), so this outlives them; it bounds what a waiter that died in line costs:
 * a release within this time hands the lock to it, and the lock then waits for that lease to expire.
 */
export const LINE_TTL_MS = 5_000

/** `sub` takes a new place in line, in a round sent at `sentAt`. */
export function takePlace(ctx: RedlockContext, sub: RedlockSubscription, sentAt: number): void {
  sub.ticket = Date.now()
  sub.firstTriedAt ??= sentAt
  sub.placedAt = sentAt
  ctx.inLine.add(sub.owner)
}

/** Every node that answered a round sent at `sentAt` put `sub` in line: a key it hands `sub` later is set after. */
export function recordAnswers(sub: RedlockSubscription, votes: readonly Vote[], sentAt: number): void {
  votes.forEach((v, i) => {
    if (v.state === 'ok') sub.answeredAt.set(i, sentAt)
  })
}

/**
 * `sub` got the lock: the waiter behind it in this process takes its place in line now, in the background, while
 * the lock is held here (a round of its own would keep the next release from handing it the lock at home while
 * that round is out, see localSuccessor). Only its place: the script never takes the lock. A release handing it
 * the lock later, on any node, comes after this was sent, which times that lease (RedlockSubscription.answeredAt).
 */
export function placeFollower(ctx: RedlockContext, request: AcquireRequest, sub: RedlockSubscription): void {
  const follower = ctx.notifier === undefined ? undefined : followerOf(sub)
  if (follower === undefined || follower.ttlMs === undefined) return
  const sentAt = performance.now()
  takePlace(ctx, follower, sentAt)
  const args = [follower.owner, String(follower.ttlMs), String(follower.ticket), String(LINE_TTL_MS)]
  const keys = lineKeys(ctx.key(request))
  void fanOut(ctx.nodes, (node) => node.run(PLACE, keys, args), ctx.timing(follower.ttlMs)).then((votes) => {
    recordAnswers(follower, votes, sentAt)
  })
}

/** `owner` no longer waits in line nor leads a split round; whether it did either (then it may have keys to give back). */
export function leaveLine(ctx: RedlockContext, owner: string): boolean {
  const leading = ctx.leads.delete(owner)
  return ctx.inLine.delete(owner) || leading
}

/**
 * A waiter that gave up leaves the line on every node, and gives back (handing on) whatever keys it has: those of
 * a split round it led (see lost), or those a release handed it that it will not take.
 */
export async function giveUpPlace(ctx: RedlockContext, request: HolderRef): Promise<void> {
  // Announced: the contenders that stood back for this leader (see lost) try again.
  const args = ctx.releaseArgs(request, 'h')
  const keys = lineKeys(ctx.key(request))
  await fanOut(ctx.nodes, (node) => node.run(RELEASE, keys, args), ctx.timing(0))
}
