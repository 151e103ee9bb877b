/**
 * The acquisition loop: try, and while the wait allows, sleep until a release notification, the blocking
 * holder's expiry, or a jittered backoff, whichever comes first. Never a busy spin.
 */
import { randomUUID } from 'node:crypto'
import type { AcquireRequest, AcquireResult, ReleaseSubscription } from '../backend/types.js'
import { isLockError, LockTimeoutError, PermitsMismatchError } from '../errors.js'
import { describe, giveBack, grantedLease, leaseDeadline, nextPause, releaseQuietly } from './acquire-steps.js'
import { backendSilenceError, type Silence, unansweredCause } from './backend-silence.js'
import { monotonicNow, sleep } from './clock.js'
import type { LockTarget } from './context.js'
import { emitSafely } from './events.js'
import type { HeldLease } from './lease.js'
import { type Settled, settleWithin } from './settle-within.js'
import { isStopped, StopCheck, throwIfStopped } from './stop-check.js'

/** Resolved acquire options. */
export interface AcquireSettings {
  readonly waitMs: number
  readonly ttlMs: number
  readonly autoRenew: boolean
  readonly signal: AbortSignal | undefined
  /** Reject with `BackendUnavailableError` once the backend has answered nothing for this long. */
  readonly unavailableMs: number
  /** `tryAcquire`: resolve `undefined` instead of rejecting with `LockTimeoutError` when the lock is taken. */
  readonly orUndefined: boolean
}

/**
 * The least time a try may have been out when a wait ends, after the backend's last word was "held", and still be
 * taken for an answer on its way (the wait failed because of the holder: LockTimeoutError) rather than for the
 * backend going silent (BackendUnavailableError). Twice the wait's slowest answer alone is 1-3 ms when its answers
 * were fast, and one answer slowed by a loaded machine (another process on the core, a GC pause) then turned a plain
 * timeout into an outage (the ZooKeeper conformance run, two test files at once). A backend that truly stopped in
 * the last 25 ms of a wait is still reported by the next acquire.
 */
const ANSWER_ROOM_MS = 25

/** A limit of the acquire: an instant on the monotonic clock and the option that set it. */
interface Limit {
  readonly at: number
  readonly option: 'waitMs' | 'unavailableMs'
  readonly ms: number
}

/**
 * Acquires a lease for `target`, waiting up to `settings.waitMs`. Both limits are hard: an in-flight try is
 * raced against them, not awaited. When the wait runs out while the backend answers "held" it resolves
 * `undefined` (`orUndefined`, for tryAcquire) or rejects with `LockTimeoutError`; when the backend is what
 * stopped it (its last try failed or is unanswered), or it answered nothing for `unavailableMs`, it rejects with
 * `BackendUnavailableError`; on abort, with the caller's `signal.reason`. Whatever it rejects with, nothing
 * stays held or queued: a try abandoned at the deadline is given back (release, leaveQueue) when it answers.
 */
export async function acquireLease(target: LockTarget, settings: AcquireSettings): Promise<HeldLease | undefined> {
  const { ctx } = target
  const started = monotonicNow()
  throwIfStopped(settings.signal, ctx.closing)
  const waiting = settings.waitMs > 0
  const request: AcquireRequest = {
    key: target.key,
    kind: target.kind,
    owner: randomUUID(),
    ttlMs: settings.ttlMs,
    permits: target.permits,
    lockDelayMs: ctx.lockDelayMs,
    queue: waiting && (target.kind === 'fair' || target.kind === 'write'),
    queueTtlMs: ctx.queueTtlMs,
  }
  const subscription = waiting ? ctx.backend.subscribe?.(request, request.owner) : undefined
  // The first try, in a function of few locals and no closures over them: an uncontended acquire is this one try,
  // and the loop below (a context, its closures, a suspended frame as large as all its locals) allocated 1.4 of the
  // 7.8 kB of an uncontended Redis lock+unlock (heap sampling; 0.7 kB now). The try may not outlast the wait (when
  // waiting) nor the patience for a silent backend; it goes out a few µs after `started`: timing its lease from
  // `started` is the safe side.
  const waitAt = started + settings.waitMs
  const silenceAt = started + settings.unavailableMs
  const first = await settleWithin(ctx.tries, waiting && waitAt <= silenceAt ? waitAt : silenceAt, (options) =>
    ctx.backend.tryAcquire(request, options),
  )
  if (first.state === 'answered' && first.value.acquired && !isStopped(settings.signal, ctx.closing)) {
    const now = monotonicNow()
    if (now < leaseDeadline(first.value, started, settings.ttlMs)) {
      subscription?.close()
      return grantedLease(target, request.owner, first.value, started, settings, started, now)
    }
  }
  return acquireAfterFirstTry(target, settings, started, request, subscription, first)
}

/**
 * The rest of {@link acquireLease} once its first try (`first`, sent at `started`) did not simply grant: the try's
 * outcome handled as any try's, then the wait, the tries after it, and on the way out whatever must be given back.
 */
async function acquireAfterFirstTry(
  target: LockTarget,
  settings: AcquireSettings,
  started: number,
  request: AcquireRequest,
  subscription: ReleaseSubscription | undefined,
  first: Settled<AcquireResult>,
): Promise<HeldLease | undefined> {
  const { ctx } = target
  const backend = ctx.backend
  const stop = new StopCheck(settings.signal, ctx.closing)
  const waiting = settings.waitMs > 0
  const waitEnds: Limit = { at: started + settings.waitMs, option: 'waitMs', ms: settings.waitMs }
  // The backend's last answer of any kind ("held" included) in this acquire; the start until it answers.
  let answeredAt = started
  let slowestAnswerMs = 0
  const silenceEnds = (): Limit => ({
    at: answeredAt + settings.unavailableMs,
    option: 'unavailableMs',
    ms: settings.unavailableMs,
  })
  // What the last try did when it did not answer: undefined after an answer.
  let silence: Silence | undefined
  let lastError: unknown
  let abandoned: Promise<void> | undefined
  let tried = false
  let granted = false
  /** The error (or `undefined` result) that ends the acquire at `now`, or `false` to go on. */
  const verdict = (now: number): Error | undefined | false => {
    if (silence !== undefined) {
      const limit = waiting && now >= waitEnds.at ? waitEnds : silenceEnds()
      return now >= limit.at ? backendSilenceError(target, silence, limit) : false
    }
    if (now < waitEnds.at) return false
    if (settings.orUndefined) return undefined
    emitSafely(ctx.onEvent, { type: 'timeout', ...describe(target), waitedMs: now - started })
    return new LockTimeoutError(target.name, now - started, { cause: lastError })
  }
  try {
    for (let attempt = 0; ; attempt++) {
      // The first try was sent by acquireLease: a stop since then is handled below, after its outcome.
      if (attempt > 0) stop.throwIfStopped()
      const sentAt = attempt === 0 ? started : monotonicNow()
      let result: AcquireResult | undefined
      tried = true
      // A try may not outlast the wait (when waiting) nor the patience for a silent backend.
      const silenceAt = answeredAt + settings.unavailableMs
      const boundIsWait = waiting && waitEnds.at <= silenceAt
      const outcome =
        attempt === 0
          ? first
          : await settleWithin(ctx.tries, boundIsWait ? waitEnds.at : silenceAt, (options) =>
              backend.tryAcquire(request, options),
            )
      if (outcome.state === 'answered') {
        result = outcome.value
        // When and how fast the backend answered matter only to the tries after this one.
        if (!result.acquired) {
          answeredAt = monotonicNow()
          slowestAnswerMs = Math.max(slowestAnswerMs, answeredAt - sentAt)
        }
        silence = undefined
      } else if (outcome.state === 'failed') {
        const { error } = outcome
        if (!waiting || !(isLockError(error) && error.retryable) || stop.stopped) throw error
        silence = { kind: 'failed', error }
        lastError = error
        emitSafely(ctx.onEvent, { type: 'backend-error', ...describe(target), error })
      } else {
        abandoned = giveBack(target, request.owner, outcome.pending, outcome.abortReason)
        const sentMsAgo = monotonicNow() - sentAt
        stop.throwIfStopped()
        // The backend's last word was "held" and the wait ran out while one more try was out for no longer than its
        // answers take (sent a moment before the deadline, e.g. by a timer firing early): the holder, not the
        // backend, is why.
        const inTime = sentMsAgo <= Math.max(2 * slowestAnswerMs + 1, ANSWER_ROOM_MS)
        if (silence === undefined && answeredAt > started && boundIsWait && inTime) {
          lastError = unansweredCause(backend.name, sentMsAgo)
          throw verdict(Math.max(monotonicNow(), waitEnds.at)) as Error
        }
        // A backend that failed the tries before this one: its last error says more than "no answer" does.
        const earlier = silence?.kind === 'failed' ? silence.error : undefined
        silence = earlier === undefined ? { kind: 'unanswered', sentMsAgo } : { kind: 'unanswered', sentMsAgo, earlier }
        const error = backendSilenceError(target, silence, boundIsWait ? waitEnds : silenceEnds())
        emitSafely(ctx.onEvent, { type: 'backend-error', ...describe(target), error })
        throw error
      }
      if (stop.stopped) {
        if (result?.acquired === true) await releaseQuietly(target, request.owner)
        stop.throwIfStopped()
      }
      if (result?.acquired === true && monotonicNow() >= leaseDeadline(result, sentAt, settings.ttlMs)) {
        // A late grant: the answer took longer than the lease lasts (a reply held up in the network, a paused
        // process), so the server may have expired it already and granted the lock to someone else. Returning it
        // would hand the caller a lease whose signal aborts at once, after the caller was told it holds the lock.
        // Give it back (owner-checked, so a successor's lock is safe) and go on waiting.
        await releaseQuietly(target, request.owner)
        answeredAt = monotonicNow()
        result = { acquired: false }
      }
      if (result?.acquired === true) {
        granted = true
        return grantedLease(target, request.owner, result, sentAt, settings, started, monotonicNow())
      }
      if (result?.permitsInForce !== undefined) {
        throw new PermitsMismatchError(target.name, target.permits, result.permitsInForce)
      }
      const now = monotonicNow()
      const ended = verdict(now)
      if (ended !== false) {
        if (ended === undefined) return undefined
        throw ended
      }
      const remaining = Math.min(waitEnds.at, silence === undefined ? Number.POSITIVE_INFINITY : silenceEnds().at) - now
      const pause = nextPause(target, attempt, remaining, result)
      const signal = stop.waitSignal()
      try {
        if (subscription !== undefined) await subscription.wait(pause, signal)
        else await sleep(pause, signal)
      } catch (error) {
        stop.throwIfStopped()
        throw error
      }
      // No new try once a limit has passed: it could only end after the deadline.
      const afterWait = verdict(monotonicNow())
      if (afterWait !== false) {
        if (afterWait === undefined) return undefined
        throw afterWait
      }
    }
  } finally {
    subscription?.close()
    stop.dispose()
    // Any waiter that gave up tells the backend, which may keep state per waiter (a place in line, a node). After
    // an abandoned try, only once that try has answered (it may queue us again); while the backend is failing, in
    // the background, so that the caller's deadline holds.
    const leave = (): Promise<void> =>
      backend.leaveQueue(request).catch((error: unknown) => {
        emitSafely(ctx.onEvent, { type: 'backend-error', ...describe(target), error })
      })
    if (abandoned !== undefined) void abandoned.then(leave)
    else if (waiting && tried && !granted) {
      if (silence === undefined) await leave()
      else void leave()
    }
  }
}
