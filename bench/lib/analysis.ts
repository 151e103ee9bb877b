/**
 * Figures of a contended cell from the acquisitions every worker reported: throughput, the handoff gap,
 * overlapping holders (must be 0) and fairness.
 */
import { ascending, percentile } from './stats.js'

/** What one contended cell showed. */
export interface ContendedFigures {
  readonly acquisitions: number
  /** Another waiter's acquisition minus the previous holder's release call, ms. */
  readonly gapP50: number
  readonly gapP99: number
  /** Acquisitions that began before the previous holder called release. */
  readonly overlaps: number
  /** Most acquisitions of one waiter over fewest (∞ when a waiter got none). */
  readonly fairness: number
  /** Waiters that never acquired in the window. */
  readonly starved: number
}

/** Merges the flat [acquiredAt, releasedAt, waiterId] triples of every worker; `waiters` ids 0..waiters-1. */
export function analyse(parts: readonly (readonly number[])[], waiters: number): ContendedFigures {
  const all: [number, number, number][] = []
  for (const flat of parts)
    for (let i = 0; i + 2 < flat.length; i += 3) all.push([flat[i]!, flat[i + 1]!, flat[i + 2]!])
  all.sort((a, b) => a[0] - b[0])
  const gaps: number[] = []
  const perWaiter = new Array<number>(waiters).fill(0)
  let overlaps = 0
  let prev: [number, number, number] | undefined
  let releasedBy = Number.NEGATIVE_INFINITY
  for (const cur of all) {
    if (cur[0] < releasedBy) overlaps++
    if (prev !== undefined && prev[2] !== cur[2]) gaps.push(cur[0] - prev[1])
    if (cur[2] >= 0) perWaiter[cur[2]] = (perWaiter[cur[2]] ?? 0) + 1
    releasedBy = Math.max(releasedBy, cur[1])
    prev = cur
  }
  const sorted = ascending(gaps)
  const max = Math.max(...perWaiter)
  const min = Math.min(...perWaiter)
  return {
    acquisitions: all.filter((a) => a[2] >= 0).length,
    gapP50: percentile(sorted, 50),
    gapP99: percentile(sorted, 99),
    overlaps,
    fairness: min === 0 ? Number.POSITIVE_INFINITY : max / min,
    starved: perWaiter.filter((n) => n === 0).length,
  }
}
