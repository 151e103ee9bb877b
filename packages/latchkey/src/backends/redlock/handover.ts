/**
 * Handing the lock from a holder to a waiter of the same process: at release, in the same round that deletes our
 * keys (or at once, within our validity, while that round renames them behind), and the waiter taking the lease
 * so handed without a round of its own.
 */
import type { AcquireRequest, AcquireResult, HolderRef } from '../../backend/types.js'
import { fanOut, tally } from './fan-out.js'
import { type LeaseValidity, validityLeftMs } from './lease-validity.js'
import { lineKeys } from './line-keys.js'
import { followerOf, handOver } from './local-successor.js'
import { isOne, releaseRound, verdict } from './quorum-round.js'
import type { RedlockContext } from './redlock-context.js'
import type { RedlockSubscription } from './redlock-subscription.js'
import { RELEASE } from './scripts/index.js'
import { LINE_TTL_MS, leaveLine, recordAnswers, takePlace } from './waiter-line.js'

/**
 * The lease a quorum of nodes handed this waiter on releases (scripts/release.lua), taken without a round. Each
 * node set its key after one of this waiter's rounds put it in line there, or a later round refreshed it, so a
 * quorum of those keys expires no earlier than `sub.handedSince(quorum) + ttl` (see RedlockSubscription.answeredAt):
 * the lease is timed from there, and taken only while RedLock's validity (ttl - elapsed - drift) is left of it.
 */
export function handedOver(
  ctx: RedlockContext,
  request: AcquireRequest,
  sub: RedlockSubscription,
): AcquireResult | undefined {
  // Passed on at home with the validity of the holder before it (see handOn), or handed over by a release of this
  // process on a quorum (sent before any node set the key), or by releases of the line.
  const triedAt = sub.inherited ?? sub.handedAt ?? sub.handedSince(ctx.settings.quorum)
  if (triedAt === undefined) return undefined
  // Past its validity, a round (which refreshes the keys it has) settles it.
  if (validityLeftMs(request.ttlMs, performance.now() - triedAt, ctx.settings.driftFactor) <= 0) return undefined
  if (sub.inherited !== undefined) sub.tookInherited = true
  sub.owesTry = false
  leaveLine(ctx, request.owner)
  ctx.validity.set(request.owner, { from: triedAt, ttlMs: request.ttlMs })
  return { acquired: true, token: 0n, grantedAt: triedAt }
}

/**
 * A release that hands the lock to `next`, a waiter of this process, in the same round: each node that still has
 * our key sets it to `next` for its lease. With a quorum of them and validity left, `next` holds the lock from
 * when this round was sent (every node set its key after that); otherwise `next` gives back what it got (to the
 * line) and waits on. The releaser's answer is a release's: true when a majority had our value.
 */
export async function handOn(
  ctx: RedlockContext,
  request: HolderRef,
  next: RedlockSubscription,
  validity: LeaseValidity | undefined,
): Promise<boolean> {
  const ttlMs = next.ttlMs ?? 0
  const args = [request.owner, ctx.channel(request), 't', next.owner, String(ttlMs)]
  // The same round places the waiter behind `next` in line, with the lease `next` has (the waiters of one process
  // share the lock's options in practice; a different lease only changes what a later release of the line hands
  // it, and its own rounds correct its entry): it will be the head while `next` holds the lock.
  const follower = ctx.notifier === undefined ? undefined : followerOf(next)
  const sentAt = performance.now()
  if (follower !== undefined) {
    takePlace(ctx, follower, sentAt)
    args.push(follower.owner, String(follower.ticket), String(LINE_TTL_MS))
  }
  // The lock passes at once, within the validity this process holds it for: `next` takes the lease timed from
  // where ours is (the same lease length, and at least half of it left, so that the core does not renew at once),
  // while the round renames the keys to it behind. On each node the rename runs after every command sent to it
  // before (one connection), and before any `next` sends once it holds the lock (its renewal, its release), so
  // those find its name wherever ours was. As safe as our holding on for as long: the keys that name us or it
  // expire no earlier than validity.from + ttl on a quorum, and the lease of `next` ends before that (less drift).
  if (validity !== undefined && validity.ttlMs === ttlMs && performance.now() - validity.from < ttlMs / 2) {
    next.inherited = validity.from
    // In line, so that giving up gives the keys back (leaveQueue).
    ctx.inLine.add(next.owner)
    next.fire()
    return passOn(ctx, request, next, args, sentAt)
  }
  let settled = () => {}
  next.handing = new Promise((resolve) => {
    settled = resolve
  })
  try {
    return await handOnRound(ctx, request, next, args, sentAt, follower)
  } finally {
    next.handing = undefined
    settled()
  }
}

/**
 * The rename behind a lock passed on at home (see handOn). If `next` did not take the lease meanwhile (it gave up),
 * its keys are given back like a release of its own. The releaser's answer is a release's: true when a majority
 * had our value, false when a majority did not (then the lease `next` took is no better than ours was: its renewal
 * or release finds out, as ours would have).
 */
async function passOn(
  ctx: RedlockContext,
  request: HolderRef,
  next: RedlockSubscription,
  args: string[],
  sentAt: number,
): Promise<boolean> {
  const keys = lineKeys(ctx.key(request))
  const votes = await releaseRound(ctx, keys, args)
  const t = tally(votes, isOne)
  const held = ctx.validity.get(next.owner)
  if (next.closed && !next.tookInherited && held === undefined) {
    // It left without the lock (its leaveQueue gives the keys back too: it is in line). Still waiting, it takes the
    // lease when it runs, or, past the validity, its round finds the keys already its own.
    const back = ctx.releaseArgs({ ...request, owner: next.owner }, 'h')
    await fanOut(ctx.nodes, (node) => node.run(RELEASE, keys, back), ctx.releaseTiming())
  } else if (next.tookInherited && held !== undefined && t.yes >= ctx.settings.quorum) {
    // Renamed on a quorum: its keys are known to live from this round on.
    ctx.validity.set(next.owner, { from: Math.max(held.from, sentAt), ttlMs: held.ttlMs })
  }
  return verdict(ctx, votes, 'release', request.key)
}

/** The round of a release handing `next` the lock (see handOn), then waking it, or taking back what it got. */
async function handOnRound(
  ctx: RedlockContext,
  request: HolderRef,
  next: RedlockSubscription,
  args: string[],
  sentAt: number,
  follower: RedlockSubscription | undefined,
): Promise<boolean> {
  const ttlMs = next.ttlMs ?? 0
  const keys = lineKeys(ctx.key(request))
  const votes = await releaseRound(ctx, keys, args)
  // Every node that answered placed the follower in line (whatever it answered): a key a later release hands it
  // there is set after this round was sent.
  if (follower !== undefined) recordAnswers(follower, votes, sentAt)
  const t = tally(votes, isOne)
  const timeLeft = validityLeftMs(ttlMs, performance.now() - sentAt, ctx.settings.driftFactor)
  if (t.yes >= ctx.settings.quorum && timeLeft > 0 && !next.closed) {
    if (ctx.notifier !== undefined) handOver(next, sentAt)
    return true
  }
  // Not handed over: `next` gives back the keys it may have got, as a release (to the line, announced).
  const back = ctx.releaseArgs({ ...request, owner: next.owner }, 'h')
  const targets = ctx.nodes.filter(
    (_, i) => !(votes[i]?.state === 'ok' && !isOne((votes[i] as { value: unknown }).value)),
  )
  await fanOut(targets, (node) => node.run(RELEASE, keys, back), ctx.timing(ttlMs))
  return verdict(ctx, votes, 'release', request.key)
}
