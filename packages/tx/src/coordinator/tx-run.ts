import { type BranchFn, isRetryable } from '../branch.js'
import { describe, TxParkedError, TxTimeoutError } from '../errors.js'
import type { TxChange } from '../store/types.js'
import type { BranchOp, TxEvent, TxStatus } from '../types.js'
import { backoffMs, sleep } from './backoff.js'
import { crashPoint } from './crash-point.js'
import { Parked, StopDriving } from './drive-errors.js'
import { RunRecord } from './run-record.js'

/** The outcome of a forward operation (one that may fail). */
export type CallOutcome = { ok: true; result: unknown } | { ok: false; error: unknown }

/**
 * One transaction being driven by this coordinator under its lease: its transitions and its branch calls, each
 * written to the log (see {@link RunRecord}) before it is acted on.
 */
export class TxRun extends RunRecord {
  /** The failure that made a forward phase abort, when it happened in this run. */
  failure: { branch: string; cause: unknown } | undefined

  /** Reports an event about this transaction. */
  emit(event: Omit<TxEvent, 'gid' | 'kind' | 'name'>): void {
    this.env.emit({ gid: this.gid, kind: this.record.kind, name: this.record.name, status: this.status, ...event })
  }

  /** Writes a new global status with a history entry of the same name, then reports it. */
  async transition(status: TxStatus, extra: Omit<TxChange, 'event' | 'status'> = {}, detail?: string): Promise<void> {
    await this.write({ ...extra, status, event: { type: status, ...(detail === undefined ? {} : { detail }) } })
    crashPoint('after-log:status', status)
    this.emit({ type: status })
  }

  /** A forward operation failed for good: remember why and write `aborting` before any compensation. */
  async abortAfter(id: string, op: BranchOp, error: unknown): Promise<void> {
    this.failure = { branch: id, cause: error }
    const message = describe(error)
    await this.transition(
      'aborting',
      // parkedFrom: a concurrent step may have parked the transaction meanwhile; the failure decides.
      { error: message, parkedFrom: null, branches: [{ id, op, status: 'failed', lastError: message }] },
      `${op} of "${id}" failed: ${message}`,
    )
  }

  /** Whether the forward phase has a deadline (TCC's try phase) and it has passed. */
  pastDeadline(): boolean {
    return this.record.deadlineAt !== null && Date.now() > this.record.deadlineAt
  }

  /** The forward phase outlived its deadline although no operation failed: write `aborting`, blaming none. */
  async abortTimedOut(): Promise<void> {
    const error = new TxTimeoutError(this.gid, this.env.timeoutMs)
    this.failure = { branch: '', cause: error }
    await this.transition('aborting', { error: error.message, parkedFrom: null }, error.message)
  }

  /**
   * Calls one branch operation until it succeeds. A forward operation (`mayFail`) returns its failure when it
   * throws a non-retryable error or its deadline passed; anything else is retried with backoff, and after
   * `retry.attempts` attempts the transaction is parked (throws {@link Parked}).
   */
  async call(id: string, op: BranchOp, fn: BranchFn, mayFail: boolean): Promise<CallOutcome> {
    for (;;) {
      if (mayFail && this.pastDeadline()) return { ok: false, error: new TxTimeoutError(this.gid, this.env.timeoutMs) }
      const attempt = this.branch(id, op).attempts + 1
      await this.write({
        branches: [{ id, op, status: 'running', attempts: attempt }],
        event: { type: 'branch-start', branch: id, op, detail: `attempt ${attempt}` },
      })
      crashPoint('after-log:branch-running', id, op, attempt)
      // Paused (GC, SIGSTOP) since the write above, past the lease: another coordinator may own the transaction
      // now. Its fencing refuses our next write, but a branch call is not a write, so check the clock first.
      if (Date.now() >= this.lease.expiresAt) throw new StopDriving('lease expired before the branch call')
      this.emit({ type: 'branch-start', branch: id, op, attempt })
      const started = performance.now()
      const outcome = await this.invoke(id, op, fn, attempt)
      const ms = Math.round(performance.now() - started)
      crashPoint('after-branch-call', id, op, attempt)
      // Lease lost or closing while the branch ran: its outcome is not ours to record. Whoever resumes the
      // transaction calls the branch again (branches are idempotent), so nothing is lost.
      if (this.signal.aborted) throw new StopDriving('lease lost or coordinator closing')
      if (outcome.ok) return { ok: true, result: this.succeeded(id, op, attempt, ms, outcome.result) }
      if (mayFail && !isRetryable(outcome.error)) {
        this.emit({ type: 'branch-failed', branch: id, op, attempt, ms, error: outcome.error })
        return outcome
      }
      await this.retryLater(id, op, attempt, ms, outcome.error)
    }
  }

  /** A branch call succeeded: recorded now, written with the next write (see writeLater); the result as stored. */
  private succeeded(id: string, op: BranchOp, attempt: number, ms: number, value: unknown): unknown {
    const result = value === undefined ? null : value
    this.writeLater(
      {
        branches: [{ id, op, status: 'succeeded', result, lastError: null }],
        event: { type: 'branch-succeeded', branch: id, op, detail: `attempt ${attempt}, ${ms} ms` },
      },
      () => {
        crashPoint('after-log:branch-succeeded', id, op, attempt)
        this.emit({ type: 'branch-succeeded', branch: id, op, attempt, ms })
      },
    )
    return result
  }

  private async invoke(id: string, op: BranchOp, fn: BranchFn, attempt: number): Promise<CallOutcome> {
    const ctx = { gid: this.gid, branch: id, op, input: this.record.input, attempt, signal: this.signal }
    try {
      return { ok: true, result: await fn({ ...ctx, results: this.results() }) }
    } catch (error) {
      return { ok: false, error }
    }
  }

  private async retryLater(id: string, op: BranchOp, attempt: number, ms: number, error: unknown): Promise<void> {
    const message = describe(error)
    // A concurrent branch parked the transaction already: stop retrying here too; `tc.retry` resumes both.
    if (this.status === 'parked') throw new Parked(new TxParkedError(this.gid, id, op, attempt, error))
    if (attempt >= this.env.retry.attempts) {
      const parked = new TxParkedError(this.gid, id, op, attempt, error)
      const from = this.status
      await this.write({
        status: 'parked',
        parkedFrom: from,
        error: parked.message,
        branches: [{ id, op, lastError: message }],
        event: { type: 'parked', branch: id, op, detail: `from ${from}: ${message}` },
      })
      crashPoint('after-log:parked', id, op, attempt)
      this.emit({ type: 'parked', branch: id, op, attempt, ms, error: parked })
      throw new Parked(parked)
    }
    const delay = backoffMs(attempt, this.env.retry)
    await this.write({
      branches: [{ id, op, lastError: message }],
      event: {
        type: 'branch-retry',
        branch: id,
        op,
        detail: `attempt ${attempt} failed (${message}); next in ${delay} ms`,
      },
    })
    crashPoint('after-log:branch-retry', id, op, attempt)
    this.emit({ type: 'branch-retry', branch: id, op, attempt, ms, error })
    try {
      await sleep(delay, this.signal)
    } catch {
      throw new StopDriving('lease lost or coordinator closing')
    }
  }
}
