/**
 * What the acquisition loop (acquire.ts) does around a try: the lease of a grant, where a grant's lease ends,
 * giving back a grant nobody will take (a try abandoned at a deadline, a late grant, a stop), and the pause
 * before the next try.
 */
import type { AcquireResult, Backend } from '../backend/types.js'
import type { AcquireSettings } from './acquire.js'
import { driftMs, jitter } from './clock.js'
import type { LockTarget } from './context.js'
import { emitSafely } from './events.js'
import { HeldLease } from './lease.js'

/** The first poll interval when the backend does not push releases; it doubles up to `maxPollMs`. */
const FIRST_POLL_MS = 2
/** Longest sleep between tries when releases are pushed: a bound on how long a lost message can cost. */
const PUSHED_FALLBACK_MS = 2_000

/**
 * The lease of a try sent at `sentAt` that `result` granted, reported as `acquired` (the acquire began at
 * `started`; `now` is when the grant was taken, read once by the caller: the clock is not free).
 */
export function grantedLease(
  target: LockTarget,
  owner: string,
  result: AcquireResult & { acquired: true },
  sentAt: number,
  settings: AcquireSettings,
  started: number,
  now: number,
): HeldLease {
  const leaseStart = Math.min(sentAt, result.grantedAt ?? sentAt)
  const lease = new HeldLease(target, owner, result.token, leaseStart, settings.ttlMs, settings.autoRenew, now)
  const { onEvent } = target.ctx
  if (onEvent !== undefined) {
    emitSafely(onEvent, {
      type: 'acquired',
      ...describe(target),
      token: result.token,
      waitedMs: now - started,
      reentrant: false,
    })
  }
  return lease
}

/** Where a lease granted by `result` to a try sent at `sentAt` ends on this process's clock (as HeldLease times it). */
export function leaseDeadline(result: { grantedAt?: number | undefined }, sentAt: number, ttlMs: number): number {
  return Math.min(sentAt, result.grantedAt ?? sentAt) + ttlMs - driftMs(ttlMs)
}

/** Releases the grant of a try abandoned at a deadline, should it answer `acquired` later. */
export function giveBack(
  target: LockTarget,
  owner: string,
  pending: Promise<AcquireResult>,
  abortReason: unknown,
): Promise<void> {
  return pending.then(
    async (result) => {
      if (result.acquired) await releaseQuietly(target, owner)
    },
    (error: unknown) => {
      // A backend that honoured the abort has stopped, which is what the core asked for.
      if (error === abortReason) return
      emitSafely(target.ctx.onEvent, { type: 'backend-error', ...describe(target), error })
    },
  )
}

/** How long to sleep before the next try. */
export function nextPause(
  target: LockTarget,
  attempt: number,
  remaining: number,
  result: AcquireResult | undefined,
): number {
  const { ctx } = target
  const retryAfter = result !== undefined && !result.acquired ? result.retryAfterMs : undefined
  let pause: number
  if (result === undefined) pause = jitter(Math.min(1_000, 25 * 2 ** attempt))
  else if (ctx.backend.capabilities.notifications === 'global') pause = PUSHED_FALLBACK_MS
  else pause = jitter(Math.min(ctx.maxPollMs, FIRST_POLL_MS * 2 ** Math.min(attempt, 20)))
  // A queued waiter must come back before its place in line expires.
  if (target.kind === 'fair' || target.kind === 'write') pause = Math.min(pause, ctx.queueTtlMs / 3)
  return Math.max(0, Math.min(pause, remaining, retryAfter ?? Number.POSITIVE_INFINITY))
}

/** Releases `owner`'s grant, reporting a failure as a `backend-error` event. */
export async function releaseQuietly(target: LockTarget, owner: string): Promise<void> {
  try {
    await target.ctx.backend.release({ key: target.key, kind: target.kind, owner })
  } catch (error) {
    emitSafely(target.ctx.onEvent, { type: 'backend-error', ...describe(target), error })
  }
}

/** The fields every event of `target` carries. */
export function describe(target: LockTarget): { name: string; kind: LockTarget['kind']; backend: string } {
  return { name: target.name, kind: target.kind, backend: (target.ctx.backend as Backend).name }
}
