/**
 * How long a RedLock round waits for each node: a per-node deadline scaled to the lease, a longer one for a node never
 * heard from, and a longer one still for releases.
 */
import type { FanOutTiming } from './fan-out.js'

/**
 * The default per-node timeout: 0.5 % of the lease, between 50 and 200 ms (50 ms for a 10 s lease, the upper end
 * of the 5-50 ms the Redis docs give for one). The floor is for scheduling, not the network: on a busy
 * host a healthy redis-server (or this event loop) is sometimes descheduled for tens of ms, and a node wrongly
 * timed out costs a whole attempt. A node known to be down is not waited for at all, and a paused one only
 * delays a round that has no majority without it.
 */
export function defaultNodeTimeoutMs(ttlMs: number): number {
  return Math.min(200, Math.max(50, Math.round(ttlMs * 0.005)))
}

/** The shortest per-node deadline of a release when `nodeTimeoutMs` is not set (see releaseTiming). */
const RELEASE_NODE_TIMEOUT_MS = 1_000

/** A node never heard from yet (its client may still be connecting) gets this long. */
const FIRST_CONTACT_MS = 1_000

/** The deadlines of a round for a lease of `ttlMs`; `nodeTimeoutMs` is the fixed per-node timeout, if set. */
export function nodeTiming(nodeTimeoutMs: number | undefined, ttlMs: number): FanOutTiming {
  // Calls without a lease (release, isLocked) use the timeout of the default 30 s lease.
  const timeoutMs = nodeTimeoutMs ?? defaultNodeTimeoutMs(ttlMs > 0 ? ttlMs : 30_000)
  return { timeoutMs, firstContactMs: FIRST_CONTACT_MS }
}

/**
 * A release's per-node deadline: at least {@link RELEASE_NODE_TIMEOUT_MS} unless `nodeTimeoutMs` was set. It resolves
 * at a quorum of answers like any round, so a paused node costs nothing while a majority answers; the deadline
 * matters only when fewer do, and then the longer wait is the better bet: a release that gives up fails the caller
 * and leaves its keys to expire (the lock blocked up to a lease), where a node a loaded host did not schedule for
 * 50 ms (seen on the 2-core bench host) answers a moment later.
 */
export function releaseTiming(nodeTimeoutMs: number | undefined): FanOutTiming {
  const t = nodeTiming(nodeTimeoutMs, 0)
  if (nodeTimeoutMs !== undefined) return t
  return { ...t, timeoutMs: Math.max(t.timeoutMs, RELEASE_NODE_TIMEOUT_MS) }
}
