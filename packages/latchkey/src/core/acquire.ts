/**
 * The acquisition loop: try, and while the wait allows, sleep until a release notification, the blocking
 * holder's expiry, or a jittered backoff, whichever comes first. Never a busy spin.
 */
import { randomUUID } from 'node:crypto'
import type { AcquireRequest, AcquireResult, Backend } from '../backend/types.js'
import { isLockError, LocksClosedError, LockTimeoutError, PermitsMismatchError } from '../errors.js'
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
  const stop = new StopCheck(settings.signal, ctx.closing)
  stop.throwIfStopped()
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
  const subscription = waiting ? backend.subscribe?.(request, request.owner) : undefined
  let tried = false
  let granted = false
  let lastError: unknown
  try {
    for (let attempt = 0; ; attempt++) {
      stop.throwIfStopped()
      const sentAt = monotonicNow()
      let result: AcquireResult | undefined
      tried = true
      try {
        result = await backend.tryAcquire(request)
      } catch (error) {
        if (!waiting || !(isLockError(error) && error.retryable) || stop.stopped) throw error
        lastError = error
        emitSafely(ctx.onEvent, { type: 'backend-error', ...describe(target), error })
      }
      if (stop.stopped) {
        if (result?.acquired === true) await releaseQuietly(target, request.owner)
        stop.throwIfStopped()
      }
      if (result?.acquired === true) {
        granted = true
        const leaseStart = Math.min(sentAt, result.grantedAt ?? sentAt)
        const lease = new HeldLease(target, request.owner, result.token, leaseStart, settings.ttlMs, settings.autoRenew)
        if (ctx.onEvent !== undefined) {
          const waitedMs = monotonicNow() - started
          emitSafely(ctx.onEvent, {
            type: 'acquired',
            ...describe(target),
            token: result.token,
            waitedMs,
            reentrant: false,
          })
        }
        return lease
      }
      if (result?.permitsInForce !== undefined) {
        throw new PermitsMismatchError(target.name, target.permits, result.permitsInForce)
      }
      const waitedMs = monotonicNow() - started
      const remaining = settings.waitMs - waitedMs
      if (remaining <= 0) {
        if (settings.orUndefined) return undefined
        emitSafely(ctx.onEvent, { type: 'timeout', ...describe(target), waitedMs })
        throw new LockTimeoutError(target.name, waitedMs, { cause: lastError })
      }
      const pause = nextPause(target, attempt, remaining, result)
      const signal = stop.linked()
      if (subscription !== undefined) await subscription.wait(pause, signal)
      else await sleep(pause, signal)
    }
  } finally {
    subscription?.close()
    stop.dispose()
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

/**
 * The caller's signal and `close()`, checked cheaply on every try; one linked `AbortSignal` is built only when
 * the acquire has to wait (an uncontended acquire never pays for an AbortController and its listeners).
 */
class StopCheck {
  private link: { controller: AbortController; onUser(): void; onClose(): void } | undefined

  constructor(
    private readonly user: AbortSignal | undefined,
    private readonly closing: AbortSignal,
  ) {}

  get stopped(): boolean {
    return this.user?.aborted === true || this.closing.aborted
  }

  /** Rejects with the caller's reason, or `LocksClosedError` after `close()`. */
  throwIfStopped(): void {
    if (this.user?.aborted) throw this.user.reason
    if (this.closing.aborted) throw closedError()
  }

  /** A signal that aborts like {@link throwIfStopped} would throw; created once, on the first wait. */
  linked(): AbortSignal {
    if (this.link !== undefined) return this.link.controller.signal
    const controller = new AbortController()
    const onUser = (): void => controller.abort(this.user?.reason)
    const onClose = (): void => controller.abort(closedError())
    this.link = { controller, onUser, onClose }
    if (this.user?.aborted) onUser()
    else if (this.closing.aborted) onClose()
    else {
      this.user?.addEventListener('abort', onUser, { once: true })
      this.closing.addEventListener('abort', onClose, { once: true })
    }
    return controller.signal
  }

  dispose(): void {
    if (this.link === undefined) return
    this.user?.removeEventListener('abort', this.link.onUser)
    this.closing.removeEventListener('abort', this.link.onClose)
  }
}

function closedError(): LocksClosedError {
  return new LocksClosedError('latchkey: Locks.close() was called while acquiring')
}
