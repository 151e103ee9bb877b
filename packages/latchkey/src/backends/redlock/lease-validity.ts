/**
 * RedLock's lease validity: what is left of a lease once the time its round took and the clock drift are taken off.
 * A lease is taken (or passed on) only while some is left.
 */

/** When a quorum of nodes is known to keep a holder's keys from, and for how long. */
export interface LeaseValidity {
  readonly from: number
  readonly ttlMs: number
}

/** RedLock's validity, ttl - elapsed - drift: what is left of a lease of `ttlMs` whose round took `elapsedMs`. */
export function validityLeftMs(ttlMs: number, elapsedMs: number, driftFactor: number): number {
  const drift = ttlMs * driftFactor + 2
  return ttlMs - elapsedMs - drift
}
