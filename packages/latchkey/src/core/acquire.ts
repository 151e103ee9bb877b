/**
 * The acquisition loop: try, and while the wait allows, sleep until a release notification, the blocking
 * holder's expiry, or a jittered backoff, whichever comes first. Never a busy spin.
 */
import { randomUUID } from 'node:crypto'
import type { AcquireRequest, AcquireResult, Backend } from '../backend/types.js'
import { isLockError, LocksClosedError, LockTimeoutError } from '../errors.js'
import { jitter, monotonicNow, sleep } from './clock.js'
import type { LockTarget } from './context.js'
import { emitSafely } from './events.js'
import { HeldLease } from './lease.js'

/** Resolved acquire options. */
export interface AcquireSettings {
  readonly waitMs: number
  readonly ttlMs: number
  readonly autoRenew: boolean
  readonly signal: AbortSignal | undefined
  /** `tryAcquire`: resolve `undefined` instead of rejecting with `LockTimeoutError` when the lock is taken. */
  readonly orUndefined: boolean
}

/** The first poll interval when the backend does not push releases; it doubles up to `maxPollMs`. */
const FIRST_POLL_MS = 2
/** Longest sleep between tries when releases are pushed: a bound on how long a lost message can cost. */
const PUSHED_FALLBACK_MS = 2_000

/**
 * Acquires a lease for `target`, waiting up to `settings.waitMs`. When the wait runs out it resolves `undefined`
 * (`orUndefined`, for tryAcquire) or rejects with `LockTimeoutError`; it rejects with the caller's
 * `signal.reason` on abort. Whatever it rejects with, nothing stays held or queued.
 */
export async function acquireLease(target: LockTarget, settings: AcquireSettings): Promise<HeldLease | undefined> {
  const { ctx } = target
  const backend = ctx.backend
  const started = monotonicNow()
  const abort = linkAbort(settings.signal, ctx.closing)
  const waiting = settings.waitMs > 0
  const queue = waiting && (target.kind === 'fair' || target.kind === 'write')
  const request: AcquireRequest = {
    key: target.key,
    kind: target.kind,
    owner: randomUUID(),
    ttlMs: settings.ttlMs,
    permits: target.permits,
    lockDelayMs: ctx.lockDelayMs,
    queue,
    queueTtlMs: ctx.queueTtlMs,
  }
  const subscription = waiting && !abort.signal.aborted ? backend.subscribe?.(request, request.owner) : undefined
  let tried = false
  let granted = false
  let lastError: unknown
  try {
    for (let attempt = 0; ; attempt++) {
      abort.signal.throwIfAborted()
      const sentAt = monotonicNow()
      let result: AcquireResult | undefined
      tried = true
      try {
        result = await backend.tryAcquire(request)
      } catch (error) {
        if (!waiting || !(isLockError(error) && error.retryable) || abort.signal.aborted) throw error
        lastError = error
        emitSafely(ctx.onEvent, { type: 'backend-error', ...describe(target), error })
      }
      if (abort.signal.aborted) {
        if (result?.acquired === true) await releaseQuietly(target, request.owner)
        throw abort.signal.reason
      }
      if (result?.acquired === true) {
        granted = true
        const lease = new HeldLease(target, request.owner, result.token, sentAt, settings.ttlMs, settings.autoRenew)
        const waitedMs = monotonicNow() - started
        emitSafely(ctx.onEvent, {
          type: 'acquired',
          ...describe(target),
          token: result.token,
          waitedMs,
          reentrant: false,
        })
        return lease
      }
      const waitedMs = monotonicNow() - started
      const remaining = settings.waitMs - waitedMs
      if (remaining <= 0) {
        if (settings.orUndefined) return undefined
        emitSafely(ctx.onEvent, { type: 'timeout', ...describe(target), waitedMs })
        throw new LockTimeoutError(target.name, waitedMs, { cause: lastError })
      }
      const pause = nextPause(target, attempt, remaining, result)
      if (subscription !== undefined) await subscription.wait(pause, abort.signal)
      else await sleep(pause, abort.signal)
    }
  } finally {
    subscription?.close()
    abort.dispose()
    // Any waiter that gave up tells the backend, which may keep state per waiter (a place in line, a node).
    if (waiting && tried && !granted) {
      await backend.leaveQueue(request).catch((error: unknown) => {
        emitSafely(ctx.onEvent, { type: 'backend-error', ...describe(target), error })
      })
    }
  }
}

/** How long to sleep before the next try. */
function nextPause(target: LockTarget, attempt: number, remaining: number, result: AcquireResult | undefined): number {
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

async function releaseQuietly(target: LockTarget, owner: string): Promise<void> {
  try {
    await target.ctx.backend.release({ key: target.key, kind: target.kind, owner })
  } catch (error) {
    emitSafely(target.ctx.onEvent, { type: 'backend-error', ...describe(target), error })
  }
}

function describe(target: LockTarget): { name: string; kind: LockTarget['kind']; backend: string } {
  return { name: target.name, kind: target.kind, backend: (target.ctx.backend as Backend).name }
}

/** One signal that aborts with the caller's reason, or with `LocksClosedError` when `close()` is called. */
function linkAbort(user: AbortSignal | undefined, closing: AbortSignal): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController()
  const onUser = (): void => controller.abort(user?.reason)
  const onClose = (): void =>
    controller.abort(new LocksClosedError('latchkey: Locks.close() was called while acquiring'))
  if (user?.aborted) onUser()
  else if (closing.aborted) onClose()
  else {
    user?.addEventListener('abort', onUser, { once: true })
    closing.addEventListener('abort', onClose, { once: true })
  }
  return {
    signal: controller.signal,
    dispose() {
      user?.removeEventListener('abort', onUser)
      closing.removeEventListener('abort', onClose)
    },
  }
}
