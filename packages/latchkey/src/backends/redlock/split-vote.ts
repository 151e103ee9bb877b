/**
 * A round a majority answered without granting: the plurality leader of a split vote keeps its keys and tries again
 * at once, the others give theirs back and stand back for it as for a holder.
 */
import type { AcquireRequest } from '../../backend/types.js'
import { isGone, standBack } from './contention.js'
import type { Vote } from './fan-out.js'
import { giveBack } from './give-back.js'
import type { RedlockContext } from './redlock-context.js'
import { type Attempt, heldOrSplit, plurality } from './votes.js'

/** Rounds in a row a plurality leader keeps its keys; then it gives them back like everyone (views may differ). */
const MAX_LEADS = 3

/**
 * A round a majority answered without granting. A holder whose release was announced but whose key a node still
 * had (the release is on its way there) is counted as gone, and the round is retried at once. Among the
 * remaining contenders, every one of which sees the same votes, the one with most nodes (ties to the smallest
 * owner id: the plurality leader) keeps its keys and tries again at once while the others give theirs back and
 * stand back for it as for a holder: a split vote then costs one more round instead of everyone backing off.
 * Only a waiting acquire leads, since only its end is reported to the backend (leaveQueue gives the keys back),
 * and only {@link MAX_LEADS} rounds in a row, in case two contenders' views differ (a node timed out for one).
 */
export async function lost(
  ctx: RedlockContext,
  request: AcquireRequest,
  votes: readonly Vote[],
  waiting: boolean,
): Promise<Attempt> {
  const channel = ctx.channel(request)
  const notifier = ctx.notifier
  const now = performance.now()
  const stale = (holder: string) => isGone(notifier?.channelOf(channel), holder, now)
  const view = plurality(votes, request.owner, stale)
  if (waiting && view.leader === request.owner) {
    const leads = (ctx.leads.get(request.owner) ?? 0) + 1
    if (leads <= MAX_LEADS) {
      ctx.leads.set(request.owner, leads)
      return { kind: 'soon' }
    }
  }
  // A leader that stops leading announces it, so that the contenders that stood back for it try again.
  const wasLeading = ctx.leads.delete(request.owner)
  await giveBack(ctx, request, votes, wasLeading ? 'release' : 'undo')
  const result = heldOrSplit(votes, ctx.settings.quorum)
  // A majority still naming a holder whose release was announced: the release has not reached those nodes yet.
  if (result.kind === 'held') return result.holder !== undefined && stale(result.holder) ? { kind: 'soon' } : result
  if (waiting && view.leader !== undefined && view.leader !== request.owner) {
    // Stand back for the leader like for a holder: the release of its lease (or its giving up) is announced,
    // and this waiter's process is woken then. Retrying on a timer instead makes every split a herd.
    const sub = notifier?.subscriptionOf(request.owner)
    if (sub !== undefined) standBack(sub, view.leader, now)
    return { kind: 'held', retryAfterMs: request.ttlMs, holder: view.leader }
  }
  return view.stale ? { kind: 'soon' } : result
}
