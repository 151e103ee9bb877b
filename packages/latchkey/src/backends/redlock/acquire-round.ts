/** One RedLock acquisition round: the same value SET on every node, a lease when a majority granted it in time. */
import type { AcquireRequest } from '../../backend/types.js'
import { fanOut, tally, type Vote } from './fan-out.js'
import { giveBack } from './give-back.js'
import { validityLeftMs } from './lease-validity.js'
import { lineKeys } from './line-keys.js'
import { quorumError } from './quorum-round.js'
import type { RedlockContext } from './redlock-context.js'
import type { RedlockSubscription } from './redlock-subscription.js'
import { ACQUIRE } from './scripts/index.js'
import { lost } from './split-vote.js'
import { type Attempt, granted } from './votes.js'
import { LINE_TTL_MS, leaveLine, recordAnswers } from './waiter-line.js'

/**
 * One RedLock round (timestamp, SET on every node, majority with validity left, else undo). Why the core's lease
 * deadline stays safe although RedLock's validity (ttl - elapsed - drift) is shorter than the TTL: the core starts
 * its clock when it *sends* tryAcquire, before `start` here, and every node starts its key's PX expiry when the SET
 * *arrives*, after that. So the core's deadline, send + ttl - (1 % + 2 ms), is never later than start + ttl -
 * drift, the end of RedLock's validity measured from step 1, and no node's key can expire (on a clock drifting less
 * than the margin) before it. The validity check below only refuses a lease that is already (nearly) over when the
 * majority answers.
 */
export async function attempt(
  ctx: RedlockContext,
  request: AcquireRequest,
  sub: RedlockSubscription | undefined,
): Promise<Attempt> {
  const { quorum } = ctx.settings
  const keys = lineKeys(ctx.key(request))
  // A waiting head takes (or keeps) its place in line on every node, so that a release hands it the lock.
  const args = [request.owner, String(request.ttlMs)]
  if (sub !== undefined) {
    sub.ticket ??= Date.now()
    args.push(String(sub.ticket), String(LINE_TTL_MS))
    ctx.inLine.add(request.owner)
  }
  const start = performance.now()
  if (sub !== undefined) sub.firstTriedAt ??= start
  const votes = await fanOut(
    ctx.nodes,
    (node) => node.run(ACQUIRE, keys, args),
    ctx.timing(request.ttlMs),
    // Stop at a majority for; a failed round waits for every node (at most one node timeout), so it knows
    // exactly which nodes granted and undoes only those and the silent ones, not every node still in flight.
    (v) => tally(v, granted).yes >= quorum,
  )
  const elapsed = performance.now() - start
  if (sub !== undefined) recordAnswers(sub, votes, start)
  const t = tally(votes, granted)
  if (t.yes >= quorum) return won(ctx, request, votes, start, elapsed)
  if (t.answered >= quorum) return lost(ctx, request, votes, sub !== undefined)
  await giveBack(ctx, request, votes, 'undo')
  throw quorumError(
    ctx,
    `RedLock could not reach a quorum for "${request.key}": ${quorum} of ${ctx.nodes.length} nodes needed, only ${t.answered} answered`,
    votes,
    granted,
    request.key,
  )
}

/** A majority granted the round sent at `start`, which took `elapsed`: a lease if validity is left, else an error. */
async function won(
  ctx: RedlockContext,
  request: AcquireRequest,
  votes: readonly Vote[],
  start: number,
  elapsed: number,
): Promise<Attempt> {
  if (validityLeftMs(request.ttlMs, elapsed, ctx.settings.driftFactor) > 0) {
    leaveLine(ctx, request.owner)
    // Every node that granted set (or refreshed) its key after `start`.
    ctx.validity.set(request.owner, { from: start, ttlMs: request.ttlMs })
    return { kind: 'acquired' }
  }
  // A majority held it, if only for a moment: release it like any other lease.
  await giveBack(ctx, request, votes, 'release')
  const yes = tally(votes, granted).yes
  throw quorumError(
    ctx,
    `RedLock got "${request.key}" on ${yes} of ${ctx.nodes.length} nodes, but only after ${Math.round(elapsed)} ms of a ${request.ttlMs} ms lease: no validity left. Raise ttlMs or lower nodeTimeoutMs`,
    votes,
    granted,
    request.key,
  )
}
