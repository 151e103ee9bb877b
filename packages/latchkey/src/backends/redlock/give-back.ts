/** Giving back the keys a failed acquisition round got: undone quietly, or released like any lease. */
import type { AcquireRequest } from '../../backend/types.js'
import { fanOut, type Vote } from './fan-out.js'
import { lineKeys } from './line-keys.js'
import type { RedlockContext } from './redlock-context.js'
import type { RedlockNode } from './redlock-node.js'
import { RELEASE } from './scripts/index.js'
import { granted } from './votes.js'

/** How a failed round's keys are given back: `undo` keeps our place in line and wakes nobody; `release` hands on. */
export type GiveBack = 'undo' | 'release'

/**
 * After a failed round: compare-and-delete on every node that may hold our value, i.e. all but those that
 * answered "held by another" (there it would be a no-op). Nodes that timed out are included on purpose: the SET
 * may have run and only its reply been lost. Best effort: a node that fails this too keeps our key until its
 * PX expiry, which blocks nobody unless a majority is left that way (then at most one TTL).
 *
 * `undo` keeps our place in line and is announced only as "~owner" (nobody waits for a minority given back, but
 * a key a release handed us may be among those deleted: until that message comes, the node does not count
 * among the grants, see RedlockSubscription.undone). `release` is a release like any other: it hands on.
 */
export async function giveBack(
  ctx: RedlockContext,
  request: AcquireRequest,
  votes: readonly Vote[],
  how: GiveBack,
): Promise<void> {
  const indexes = ctx.nodes.flatMap((_, i) => {
    const v = votes[i]
    return v?.state === 'ok' && !granted(v.value) ? [] : [i]
  })
  const targets = indexes.map((i) => ctx.nodes[i] as RedlockNode)
  const args = ctx.releaseArgs(request, how === 'undo' ? 'u' : 'h')
  const keys = lineKeys(ctx.key(request))
  const results = await fanOut(targets, (node) => node.run(RELEASE, keys, args), ctx.timing(request.ttlMs))
  const sub = how === 'undo' ? ctx.notifier?.subscriptionOf(request.owner) : undefined
  if (sub === undefined) return
  results.forEach((r, j) => {
    const node = indexes[j]
    // Deleted, or perhaps deleted (no answer): not a grant until its message says so.
    if (node !== undefined && !(r.state === 'ok' && Number(r.value) === 0)) sub.undoneOn(node, 1)
  })
}
