/**
 * Leader election (Curator's `LeaderLatch`, etcd's `concurrency.Election`) built on the lock API, so every backend
 * has it: each participant contends for one mutex with auto-renew; the holder leads. A leadership term is one
 * lease: it ends when the lease is lost (expired, taken away, not renewable in time) or on `close()`, and then the
 * participant contends again. A successor is woken by the backend's release notification where it has one (else
 * by the core's poll), so a `close()` hands over at once; after a crash the lease's TTL bounds the takeover.
 */
import { LocksClosedError, NotLockHolderError } from '../errors.js'
import { type AcquireSettings, acquireLease } from './acquire.js'
import { jitter, sleep } from './clock.js'
import type { LockTarget } from './context.js'
import { emitSafely } from './events.js'
import { LeaderListeners } from './leader-listeners.js'
import type { Leader, LeaderRevoked, LeaderTerm } from './leader-types.js'
import type { HeldLease } from './lease.js'
import { checkOptions, checkSignal } from './validate.js'

/** A term in progress: what it hands out, and the lease behind it. */
interface CurrentTerm {
  readonly term: LeaderTerm
  readonly controller: AbortController
  readonly lease: HeldLease
}

/** The longest pause between tries after the backend failed: a crashed leader's successor is not late by more. */
const MAX_RETRY_MS = 1_000

/** One participant of an election; made by `Locks.leader(name, options)`. */
export class LeaderElection implements Leader {
  private current: CurrentTerm | undefined
  /** The signal handed out between terms: the last term's (aborted), or one aborted from the start. */
  private idleSignal: AbortSignal
  private readonly stopper = new AbortController()
  private readonly listeners = new LeaderListeners()
  private readonly running: Promise<void>
  private readonly unlink: () => void

  constructor(
    private readonly target: LockTarget,
    private readonly settings: AcquireSettings,
    readonly id: string,
    stopSignals: readonly AbortSignal[],
  ) {
    this.idleSignal = AbortSignal.abort(this.notLeaderError('it has not been elected yet'))
    const stop = (): void => this.stop()
    for (const s of stopSignals) s.addEventListener('abort', stop, { once: true })
    this.unlink = () => {
      for (const s of stopSignals) s.removeEventListener('abort', stop)
    }
    if (stopSignals.some((s) => s.aborted)) this.stop()
    this.running = this.run()
  }

  get name(): string {
    return this.target.name
  }

  get isLeader(): boolean {
    return this.current !== undefined
  }

  get term(): LeaderTerm | undefined {
    return this.current?.term
  }

  get token(): bigint | undefined {
    return this.current?.term.token
  }

  get signal(): AbortSignal {
    return this.current?.term.signal ?? this.idleSignal
  }

  on(event: 'elected', listener: (term: LeaderTerm) => void): this
  on(event: 'revoked', listener: (revoked: LeaderRevoked) => void): this
  on(event: 'elected' | 'revoked', listener: (value: never) => void): this {
    this.listeners.add(event, listener)
    return this
  }

  off(event: 'elected', listener: (term: LeaderTerm) => void): this
  off(event: 'revoked', listener: (revoked: LeaderRevoked) => void): this
  off(event: 'elected' | 'revoked', listener: (value: never) => void): this {
    this.listeners.remove(event, listener)
    return this
  }

  elected(options?: { signal?: AbortSignal }): Promise<LeaderTerm> {
    const o = checkOptions('options', options)
    const signal = o.signal === undefined ? undefined : checkSignal('signal', o.signal)
    if (this.current !== undefined) return Promise.resolve(this.current.term)
    if (this.stopper.signal.aborted) return Promise.reject(this.closedError('elected() was called after close()'))
    return this.listeners.nextTerm(signal, this.stopper.signal, () =>
      this.closedError('close() was called while waiting to be elected'),
    )
  }

  async close(): Promise<void> {
    this.stop()
    await this.running
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }

  /** Ends the term in progress (synchronously, before its lease is released) and stops contending. */
  private stop(): void {
    if (this.stopper.signal.aborted) return
    this.stopper.abort(this.closedError('close() was called'))
    this.endTerm('closed', this.closedError('close() gave up leadership'))
  }

  /** Contends, leads until the term ends, and contends again, until stopped. */
  private async run(): Promise<void> {
    let failures = 0
    try {
      while (!this.stopper.signal.aborted) {
        let lease: HeldLease | undefined
        try {
          lease = await acquireLease(this.target, { ...this.settings, signal: this.stopper.signal })
        } catch (error) {
          if (this.stopper.signal.aborted) break
          const { ctx, name, kind } = this.target
          emitSafely(ctx.onEvent, { type: 'backend-error', name, kind, backend: ctx.backend.name, error })
          // Never a hot loop, whatever failed: back off, at most a second (or a TTL, if shorter).
          const pause = jitter(Math.min(MAX_RETRY_MS, this.settings.ttlMs, 25 * 2 ** Math.min(failures++, 10)))
          await sleep(pause, this.stopper.signal).catch(() => undefined)
          continue
        }
        failures = 0
        if (lease !== undefined) await this.lead(lease)
      }
    } finally {
      this.unlink()
    }
  }

  /** One term: from the grant until its lease is lost or the participant closes; then the lease is given back. */
  private async lead(lease: HeldLease): Promise<void> {
    if (this.stopper.signal.aborted) {
      await lease.release().catch(() => undefined)
      return
    }
    const controller = new AbortController()
    const term: LeaderTerm = Object.freeze({
      token: lease.token,
      signal: controller.signal,
      electedAt: Date.now(),
      id: this.id,
    })
    this.current = { term, controller, lease }
    // Listeners hear `elected` before anything can end the term, so `revoked` never comes first.
    this.listeners.elected(term)
    const ended = new Promise<void>((resolve) => {
      // An `elected` listener may have closed the participant already.
      if (this.current?.term !== term) return resolve()
      const onLost = (): void => this.endTerm('lost', lease.signal.reason as Error)
      if (lease.signal.aborted) {
        onLost()
        return resolve()
      }
      lease.signal.addEventListener('abort', onLost, { once: true })
      controller.signal.addEventListener(
        'abort',
        () => {
          lease.signal.removeEventListener('abort', onLost)
          resolve()
        },
        { once: true },
      )
    })
    await ended
    // The term has ended (this participant no longer acts as leader) before anyone else can be granted the lock.
    // A lost lease is released too: the backend may still hold it (a renewal that failed on the way back).
    await lease.release().catch(() => undefined)
  }

  /** Synchronous, so that `isLeader` and `signal` change in the same tick as the event that ended the term. */
  private endTerm(reason: LeaderRevoked['reason'], error: Error): void {
    const current = this.current
    if (current === undefined) return
    this.current = undefined
    this.idleSignal = current.controller.signal
    current.controller.abort(error)
    this.listeners.revoked(Object.freeze({ token: current.term.token, id: this.id, reason, error }))
  }

  private closedError(why: string): LocksClosedError {
    return new LocksClosedError(`Leader election "${this.name}" (participant ${this.id}): ${why}`, {
      lockName: this.name,
    })
  }

  private notLeaderError(why: string): NotLockHolderError {
    return new NotLockHolderError(`Not the leader of "${this.name}" (participant ${this.id}): ${why}`, {
      lockName: this.name,
    })
  }
}
