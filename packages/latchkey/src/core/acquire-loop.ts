/**
 * The rest of an acquire once its first try did not simply grant (acquire.ts): that try's outcome handled as any
 * try's, then the waits and the tries after them, and on the way out whatever must be given back. What the tries
 * learn (when the backend last answered, how slowly, whether it went silent) is kept in the fields of one
 * {@link AcquireLoop}, so that each way a try can end is a method of its own.
 */
import type { AcquireRequest, AcquireResult, ReleaseSubscription } from '../backend/types.js'
import { isLockError, LockTimeoutError, PermitsMismatchError } from '../errors.js'
import type { AcquireSettings } from './acquire.js'
import { describe, giveBack, grantedLease, leaseDeadline, nextPause, releaseQuietly } from './acquire-steps.js'
import { backendSilenceError, type Silence, unansweredCause } from './backend-silence.js'
import { monotonicNow, sleep } from './clock.js'
import type { LockTarget } from './context.js'
import { emitSafely } from './events.js'
import type { HeldLease } from './lease.js'
import { type Settled, settleWithin } from './settle-within.js'
import { StopCheck } from './stop-check.js'

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

/** One acquire's tries after the first, its waits between them, and its exit. */
export class AcquireLoop {
  private readonly stop: StopCheck
  private readonly waiting: boolean
  private readonly waitEnds: Limit
  /** The backend's last answer of any kind ("held" included) in this acquire; the start until it answers. */
  private answeredAt: number
  private slowestAnswerMs = 0
  /** What the last try did when it did not answer: undefined after an answer. */
  private silence: Silence | undefined
  private lastError: unknown
  /** A try abandoned at a deadline, being given back once it answers. */
  private abandoned: Promise<void> | undefined
  private tried = false
  private granted = false

  constructor(
    private readonly target: LockTarget,
    private readonly settings: AcquireSettings,
    /** When the acquire began, and its first try was sent. */
    private readonly started: number,
    private readonly request: AcquireRequest,
    private readonly subscription: ReleaseSubscription | undefined,
  ) {
    this.stop = new StopCheck(settings.signal, target.ctx.closing)
    this.waiting = settings.waitMs > 0
    this.waitEnds = { at: started + settings.waitMs, option: 'waitMs', ms: settings.waitMs }
    this.answeredAt = started
  }

  /** Runs the loop from the first try's outcome `first`: the lease, `undefined` (tryAcquire timed out) or throws. */
  async run(first: Settled<AcquireResult>): Promise<HeldLease | undefined> {
    const { target, settings, request } = this
    const backend = target.ctx.backend
    try {
      for (let attempt = 0; ; attempt++) {
        // The first try was sent by acquireLease: a stop since then is handled below, after its outcome.
        if (attempt > 0) this.stop.throwIfStopped()
        const sentAt = attempt === 0 ? this.started : monotonicNow()
        this.tried = true
        // A try may not outlast the wait (when waiting) nor the patience for a silent backend.
        const silenceAt = this.answeredAt + settings.unavailableMs
        const boundIsWait = this.waiting && this.waitEnds.at <= silenceAt
        let outcome = first
        if (attempt > 0) {
          // A grant the subscription can hand over (told by the release, or shown by its own state) is the try's
          // answer: no try is sent.
          const handed = this.subscription?.takeGrant?.()
          outcome =
            handed !== undefined
              ? { state: 'answered', value: handed }
              : await settleWithin(target.ctx.tries, boundIsWait ? this.waitEnds.at : silenceAt, (options) =>
                  backend.tryAcquire(request, options),
                )
        }
        if (outcome.state === 'failed') this.failed(outcome.error)
        else if (outcome.state !== 'answered') throw this.unanswered(outcome, sentAt, boundIsWait)
        let result = outcome.state === 'answered' ? this.answered(outcome.value, sentAt) : undefined
        if (this.stop.stopped) {
          if (result?.acquired === true) await releaseQuietly(target, request.owner)
          this.stop.throwIfStopped()
        }
        if (result?.acquired === true && monotonicNow() >= leaseDeadline(result, sentAt, settings.ttlMs)) {
          // A late grant: the answer took longer than the lease lasts (a reply held up in the network, a paused
          // process), so the server may have expired it already and granted the lock to someone else. Returning it
          // would hand the caller a lease whose signal aborts at once, after the caller was told it holds the lock.
          // Give it back (owner-checked, so a successor's lock is safe) and go on waiting.
          await releaseQuietly(target, request.owner)
          this.answeredAt = monotonicNow()
          result = { acquired: false }
        }
        if (result?.acquired === true) {
          this.granted = true
          return grantedLease(target, request.owner, result, sentAt, settings, this.started, monotonicNow())
        }
        if (result?.permitsInForce !== undefined) {
          throw new PermitsMismatchError(target.name, target.permits, result.permitsInForce)
        }
        const now = monotonicNow()
        const ended = this.verdict(now)
        if (ended !== false) {
          if (ended === undefined) return undefined
          throw ended
        }
        try {
          await this.pause(attempt, now, result)
        } catch (error) {
          this.stop.throwIfStopped()
          throw error
        }
        // No new try once a limit has passed: it could only end after the deadline.
        const afterWait = this.verdict(monotonicNow())
        if (afterWait !== false) {
          if (afterWait === undefined) return undefined
          throw afterWait
        }
      }
    } finally {
      // Awaited only when the exit must wait for the backend: one more await would cost every grant a microtask
      // turn, in the handoff gap.
      const leaving = this.exit()
      if (leaving !== undefined) await leaving
    }
  }

  /** A try's answer: when and how fast the backend answered matter only to the tries after this one. */
  private answered(result: AcquireResult, sentAt: number): AcquireResult {
    if (!result.acquired) {
      this.answeredAt = monotonicNow()
      this.slowestAnswerMs = Math.max(this.slowestAnswerMs, this.answeredAt - sentAt)
    }
    this.silence = undefined
    return result
  }

  /** A try the backend failed: thrown on unless the wait goes on through a retryable error. */
  private failed(error: unknown): void {
    if (!this.waiting || !(isLockError(error) && error.retryable) || this.stop.stopped) throw error
    this.silence = { kind: 'failed', error }
    this.lastError = error
    emitSafely(this.target.ctx.onEvent, { type: 'backend-error', ...describe(this.target), error })
  }

  /** A try still out when its bound came: given back once it answers; the error that ends the acquire. */
  private unanswered(
    outcome: Exclude<Settled<AcquireResult>, { state: 'answered' | 'failed' }>,
    sentAt: number,
    boundIsWait: boolean,
  ): Error {
    const { target } = this
    this.abandoned = giveBack(target, this.request.owner, outcome.pending, outcome.abortReason)
    const sentMsAgo = monotonicNow() - sentAt
    this.stop.throwIfStopped()
    // The backend's last word was "held" and the wait ran out while one more try was out for no longer than its
    // answers take (sent a moment before the deadline, e.g. by a timer firing early): the holder, not the
    // backend, is why.
    const inTime = sentMsAgo <= Math.max(2 * this.slowestAnswerMs + 1, ANSWER_ROOM_MS)
    if (this.silence === undefined && this.answeredAt > this.started && boundIsWait && inTime) {
      this.lastError = unansweredCause(target.ctx.backend.name, sentMsAgo)
      return this.verdict(Math.max(monotonicNow(), this.waitEnds.at)) as Error
    }
    // A backend that failed the tries before this one: its last error says more than "no answer" does.
    const earlier = this.silence?.kind === 'failed' ? this.silence.error : undefined
    this.silence =
      earlier === undefined ? { kind: 'unanswered', sentMsAgo } : { kind: 'unanswered', sentMsAgo, earlier }
    const error = backendSilenceError(target, this.silence, boundIsWait ? this.waitEnds : this.silenceEnds())
    emitSafely(target.ctx.onEvent, { type: 'backend-error', ...describe(target), error })
    return error
  }

  private silenceEnds(): Limit {
    const { unavailableMs } = this.settings
    return { at: this.answeredAt + unavailableMs, option: 'unavailableMs', ms: unavailableMs }
  }

  /** The error (or `undefined` result) that ends the acquire at `now`, or `false` to go on. */
  private verdict(now: number): Error | undefined | false {
    const { target, settings, waitEnds } = this
    if (this.silence !== undefined) {
      const limit = this.waiting && now >= waitEnds.at ? waitEnds : this.silenceEnds()
      return now >= limit.at ? backendSilenceError(target, this.silence, limit) : false
    }
    if (now < waitEnds.at) return false
    if (settings.orUndefined) return undefined
    emitSafely(target.ctx.onEvent, { type: 'timeout', ...describe(target), waitedMs: now - this.started })
    return new LockTimeoutError(target.name, now - this.started, { cause: this.lastError })
  }

  /**
   * Waits for a release notification or the next try's time, whichever comes first, within both limits. Not async:
   * the wait's own promise is returned, so a woken waiter resumes without one more microtask turn.
   */
  private pause(attempt: number, now: number, result: AcquireResult | undefined): Promise<void> {
    const silenceAt = this.silence === undefined ? Number.POSITIVE_INFINITY : this.silenceEnds().at
    const pause = nextPause(this.target, attempt, Math.min(this.waitEnds.at, silenceAt) - now, result)
    const signal = this.stop.waitSignal()
    return this.subscription !== undefined ? this.subscription.wait(pause, signal) : sleep(pause, signal)
  }

  /**
   * Any waiter that gave up tells the backend, which may keep state per waiter (a place in line, a node). After an
   * abandoned try, only once that try has answered (it may queue us again); while the backend is failing, in the
   * background, so that the caller's deadline holds. Returns the promise to await, if any.
   */
  private exit(): Promise<void> | undefined {
    this.subscription?.close()
    this.stop.dispose()
    const { target, request } = this
    const leave = (): Promise<void> =>
      target.ctx.backend.leaveQueue(request).catch((error: unknown) => {
        emitSafely(target.ctx.onEvent, { type: 'backend-error', ...describe(target), error })
      })
    if (this.abandoned !== undefined) void this.abandoned.then(leave)
    else if (this.waiting && this.tried && !this.granted) {
      if (this.silence === undefined) return leave()
      void leave()
    }
    return undefined
  }
}
