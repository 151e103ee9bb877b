/** Reading a round's votes: per-node outcomes for errors, and why a failed acquisition failed. */
import type { NodeOutcome } from '../../errors.js'
import type { Vote } from './fan-out.js'

/** How one acquisition round ended (when it did not throw). */
export type Attempt =
  | { readonly kind: 'acquired' }
  | { readonly kind: 'held'; readonly retryAfterMs: number | undefined; readonly holder?: string }
  | { readonly kind: 'split' }
  /** Try again at once: this owner leads a split round, or a node still had a holder whose release was announced. */
  | { readonly kind: 'soon' }

/** The ACQUIRE script's reply meaning "ours on this node": granted now (1), or already ours (2: a handoff, a kept key). */
export const granted = (v: unknown): boolean => Array.isArray(v) && Number(v[0]) >= 1

/** One node's outcome for `QuorumNotReachedError.nodes`. */
export function outcome(node: string, vote: Vote, yes: (v: unknown) => boolean): NodeOutcome {
  if (vote.state === 'error') return { node, outcome: 'error', error: vote.error }
  if (vote.state !== 'ok') return { node, outcome: 'timeout' }
  return { node, outcome: yes(vote.value) ? 'acquired' : 'held' }
}

/**
 * A failed round in which a majority answered: "held" when one other owner holds a majority (retry once its
 * keys expire, at the latest), otherwise a split vote among contenders.
 */
export function heldOrSplit(votes: readonly Vote[], quorum: number): Attempt {
  const byOwner = new Map<string, number[]>()
  for (const v of votes) {
    if (v.state !== 'ok' || granted(v.value) || !Array.isArray(v.value)) continue
    const holder = String(v.value[2])
    const pttls = byOwner.get(holder) ?? []
    pttls.push(Number(v.value[1]))
    byOwner.set(holder, pttls)
  }
  for (const [holder, pttls] of byOwner) {
    if (pttls.length < quorum) continue
    // The lock frees up once enough of the holder's keys expire that it no longer has a majority.
    pttls.sort((a, b) => a - b)
    const mustExpire = pttls.length - (quorum - 1)
    const at = pttls[mustExpire - 1]
    return { kind: 'held', retryAfterMs: at !== undefined && at >= 0 ? at : undefined, holder }
  }
  return { kind: 'split' }
}

/**
 * Who won most nodes in a failed round, as every contender sees it: `leader` has the most nodes, ties going to the
 * smallest owner id, so that contenders who saw the same votes agree; undefined when no node named a live owner.
 * It counts `me`'s grants and, on the other nodes, the holders they named. Holders for
 * which `gone` is true (their release was announced) are not counted, and `stale` says whether there were any.
 */
export function plurality(
  votes: readonly Vote[],
  me: string,
  gone: (holder: string) => boolean,
): { leader: string | undefined; stale: boolean } {
  const counts = new Map<string, number>()
  let stale = false
  for (const v of votes) {
    if (v.state !== 'ok' || !Array.isArray(v.value)) continue
    const owner = granted(v.value) ? me : String(v.value[2])
    if (owner !== me && gone(owner)) {
      stale = true
      continue
    }
    counts.set(owner, (counts.get(owner) ?? 0) + 1)
  }
  let leader: string | undefined
  let best = 0
  for (const [owner, n] of counts) {
    if (n > best || (n === best && leader !== undefined && owner < leader)) {
      best = n
      leader = owner
    }
  }
  return { leader, stale }
}
