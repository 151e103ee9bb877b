/**
 * Seeded randomness for the chaos test, as a pure function of the seed and a label: the same seed gives the same
 * fault decisions for the same calls in every process (coordinator, participants, the test), with no shared
 * generator state to keep in step across restarts.
 */
import { createHash } from 'node:crypto'

/** A number in [0, 1) determined by `seed` and `parts`. */
export function chance(seed: number, ...parts: (string | number)[]): number {
  const digest = createHash('sha256')
    .update(`${seed}|${parts.join('|')}`)
    .digest()
  return digest.readUInt32BE(0) / 2 ** 32
}

/** An integer in [min, max] determined by `seed` and `parts`. */
export function pick(seed: number, min: number, max: number, ...parts: (string | number)[]): number {
  return min + Math.floor(chance(seed, ...parts) * (max - min + 1))
}

/** The faults a participant injects into one call (before its effect, or after it committed). */
export type Fault = 'refuse' | 'ongoing' | 'error' | 'slow' | 'error-after' | 'slow-after'

/** Per-call probabilities: refusals only on forward ops, the rest on every op. */
export const FAULT_RATES: Readonly<Record<Fault, number>> = {
  refuse: 0.08,
  ongoing: 0.05,
  error: 0.05,
  slow: 0.03,
  'error-after': 0.05,
  'slow-after': 0.03,
}

/**
 * The fault (if any) for the `n`-th call of `gid/branch/op` at `participant` (n counts per process, so a retry
 * draws again). A business refusal (409) is only drawn for a forward op: compensations must succeed.
 */
export function faultFor(seed: number, participant: string, key: string, op: string, n: number): Fault | undefined {
  let x = chance(seed, 'fault', participant, key, op, n)
  for (const [fault, rate] of Object.entries(FAULT_RATES) as [Fault, number][]) {
    if (x < rate) return fault === 'refuse' && op !== 'action' && op !== 'try' ? undefined : fault
    x -= rate
  }
  return undefined
}
