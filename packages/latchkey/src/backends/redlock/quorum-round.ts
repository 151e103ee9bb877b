/**
 * A yes/no question put to every node at once (release, renew, check): settled as soon as a majority says yes, or
 * more than N - quorum say no; otherwise nobody knows, and that is a QuorumNotReachedError naming each node's answer.
 */
import { QuorumNotReachedError } from '../../errors.js'
import { type FanOutTiming, fanOut, tally, type Vote } from './fan-out.js'
import type { RedlockContext } from './redlock-context.js'
import type { RedlockNode } from './redlock-node.js'
import { RELEASE } from './scripts/index.js'
import { outcome } from './votes.js'

/** The scripts' "yes": 1. */
export const isOne = (v: unknown) => Number(v) === 1

/** Whether the votes so far settle a yes/no round: yes from a majority, or no from more than N - quorum. */
function settled(ctx: RedlockContext): (votes: readonly (Vote | undefined)[]) => boolean {
  const { quorum } = ctx.settings
  const n = ctx.nodes.length
  return (v) => {
    const t = tally(v, isOne)
    return t.yes >= quorum || t.no > n - quorum
  }
}

/** Runs RELEASE with `args` on every node, until the answers settle it. */
export function releaseRound(ctx: RedlockContext, keys: string[], args: string[]): Promise<Vote[]> {
  return fanOut(ctx.nodes, (node) => node.run(RELEASE, keys, args), ctx.releaseTiming(), settled(ctx))
}

/** A settled round's answer: true, false, or QuorumNotReachedError when it could not `what` `name`. */
export function verdict(ctx: RedlockContext, votes: readonly Vote[], what: string, name: string): boolean {
  const { quorum } = ctx.settings
  const n = ctx.nodes.length
  const t = tally(votes, isOne)
  if (t.yes >= quorum) return true
  if (t.no > n - quorum) return false
  throw quorumError(
    ctx,
    `RedLock could not ${what} "${name}" on a quorum: ${quorum} of ${n} nodes needed, ${t.yes} said yes, ${t.no} no, ${n - t.answered} did not answer`,
    votes,
    isOne,
    name,
  )
}

/** Yes from a majority: true; no from more than N - quorum: false; otherwise nobody knows: QuorumNotReachedError. */
export async function majority(
  ctx: RedlockContext,
  run: (node: RedlockNode) => Promise<unknown>,
  ttlMs: number,
  name: string,
  what: string,
  timing: FanOutTiming = ctx.timing(ttlMs),
): Promise<boolean> {
  const votes = await fanOut(ctx.nodes, run, timing, settled(ctx))
  return verdict(ctx, votes, what, name)
}

/** The error of a round without a quorum, with each node's outcome (`yes` reads a node's answer). */
export function quorumError(
  ctx: RedlockContext,
  message: string,
  votes: readonly Vote[],
  yes: (v: unknown) => boolean,
  name: string,
): QuorumNotReachedError {
  const nodes = votes.map((v, i) => outcome(ctx.nodes[i]?.label ?? `node ${i}`, v, yes))
  const detail = nodes.map((o) => `${o.node} ${o.outcome}`).join(', ')
  const cause = nodes.find((o) => o.error !== undefined)?.error
  return new QuorumNotReachedError(`${message} (${detail})`, nodes, { lockName: name, cause })
}
