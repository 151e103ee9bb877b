import { type BranchFn, isRetryable } from '../branch.js'
import { describe, TxParkedError, TxTimeoutError } from '../errors.js'
import type { BranchChange, HistoryEvent, NewTx, TxChange, TxStore } from '../store/types.js'
import type { BranchOp, BranchRecord, TxEvent, TxRecord, TxStatus } from '../types.js'
import { backoffMs, sleep } from './backoff.js'
import { crashPoint } from './crash-point.js'
import type { RetryPolicy } from './options.js'
import type { TxLease } from './tx-lease.js'

/** Thrown inside a drive when this coordinator must stop acting (lease lost, closing); recovery goes on. */
export class StopDriving extends Error {
  override name = 'StopDriving'
}

/** Thrown inside a drive when an operation ran out of retries and the transaction was parked. */
export class Parked extends Error {
  override name = 'Parked'
  constructor(readonly error: TxParkedError) {
    super(error.message)
  }
}

/** The outcome of a forward operation (one that may fail). */
export type CallOutcome = { ok: true; result: unknown } | { ok: false; error: unknown }

/** What the run needs from the coordinator. */
export interface RunEnv {
  readonly store: TxStore
  readonly retry: RetryPolicy
  readonly timeoutMs: number
  /** Aborted when the coordinator closes. */
  readonly closing: AbortSignal
  readonly emit: (event: TxEvent) => void
}

type MutableBranch = { -readonly [K in keyof BranchRecord]: BranchRecord[K] }

/**
 * One transaction being driven by this coordinator under its lease: the in-memory copy of its record, kept in
 * step with the log. Every transition is written (fenced by the lease's token) before it is acted on.
 */
export class TxRun {
  readonly gid: string
  status: TxStatus
  /** The failure that made a forward phase abort, when it happened in this run. */
  failure: { branch: string; cause: unknown } | undefined
  private readonly branches = new Map<string, MutableBranch>()
  readonly signal: AbortSignal
  /** Branch successes applied here but not written yet: they ride with the transaction's next write. */
  private later: { branches: BranchChange[]; events: HistoryEvent[]; after: (() => void)[] } | undefined
  /** A new transaction not written yet: its create is the first write (see {@link TxRun.createWithFirstWrite}). */
  private create: { tx: NewTx; after: () => void } | undefined

  constructor(
    readonly record: TxRecord,
    private readonly lease: TxLease,
    private readonly env: RunEnv,
  ) {
    this.gid = record.gid
    this.status = record.status
    for (const b of record.branches) this.branches.set(`${b.id}/${b.op}`, { ...b })
    this.signal = AbortSignal.any([lease.signal, env.closing])
  }

  branch(id: string, op: BranchOp): BranchRecord {
    const b = this.branches.get(`${id}/${op}`)
    if (b === undefined) throw new Error(`latchkey-tx: transaction ${this.gid} has no branch ${id}/${op}`)
    return b
  }

  /** Results of the forward operations that succeeded, by branch id. */
  results(): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const b of this.branches.values()) {
      if ((b.op === 'action' || b.op === 'try') && b.status === 'succeeded') out[b.id] = b.result
    }
    return out
  }

  /**
   * Writes a transition to the log, with the branch successes held back for it, then applies it here. Throws
   * StopDriving if the lease is gone.
   */
  async write(change: TxChange): Promise<void> {
    if (this.signal.aborted) throw new StopDriving('lease lost or coordinator closing')
    const later = this.later
    this.later = undefined
    const merged: TxChange =
      later === undefined
        ? change
        : {
            ...change,
            branches: mergeBranches([...later.branches, ...(change.branches ?? [])]),
            earlier: [...later.events, ...(change.earlier ?? [])],
          }
    // A final status ends the drive: its write releases a row lease too, so the release costs no statement.
    const final = change.status === 'succeeded' || change.status === 'failed'
    const leaseMs = this.lease.carry(final)
    const sentAt = Date.now()
    const carried = leaseMs === undefined ? merged : { ...merged, leaseMs }
    const create = this.create
    this.create = undefined
    if (create === undefined) await this.env.store.write(this.gid, this.lease.token, carried)
    else {
      await this.env.store.create(create.tx, this.lease.token, carried).catch((error: unknown) => {
        // Not created, or not knowably (the gid taken, the connection lost): a row lease is not ours to release.
        this.lease.carried(sentAt, true)
        throw error
      })
    }
    this.lease.carried(sentAt, final)
    this.apply(change)
    create?.after()
    for (const after of later?.after ?? []) after()
  }

  /**
   * A new transaction: its create is written together with its first transition (the first branch marked
   * running), one write instead of two; `after` runs once it is written. Nothing is done for the transaction
   * before that write, so the log holds it before anything is acted on, as if it had been created first.
   */
  createWithFirstWrite(tx: NewTx, after: () => void): void {
    this.create = { tx, after }
  }

  /**
   * A branch success: applied here at once, written with the transaction's next write. That write always comes
   * before anything else is done for the transaction (the next branch call, a compensation, the final status),
   * so the log holds every success before it is acted on; a crash in between loses only the record of a call
   * whose effect the participant keeps, and the call is made again, as after a crash just before any write.
   * `after` runs once it is written. Saves one log write per branch call.
   */
  private writeLater(change: { branches: BranchChange[]; event: HistoryEvent }, after: () => void): void {
    this.apply({ ...change })
    this.later ??= { branches: [], events: [], after: [] }
    this.later.branches.push(...change.branches)
    this.later.events.push(change.event)
    this.later.after.push(after)
  }

  /** Writes the branch successes still held back, if any (a drive that ends without another write). */
  async flush(): Promise<void> {
    const later = this.later
    if (later === undefined) return
    const event = later.events.at(-1) as HistoryEvent
    this.later = { ...later, events: later.events.slice(0, -1) }
    await this.write({ branches: [], event })
  }

  private apply(change: Pick<TxChange, 'status' | 'branches'>): void {
    if (change.status !== undefined) this.status = change.status
    for (const c of change.branches ?? []) {
      const b = this.branches.get(`${c.id}/${c.op}`)
      if (b === undefined) continue
      if (c.status !== undefined) b.status = c.status
      if (c.attempts !== undefined) b.attempts = c.attempts
      if (c.result !== undefined) b.result = c.result
      if (c.lastError !== undefined) b.lastError = c.lastError
    }
  }

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
      if (outcome.ok) {
        const result = outcome.result === undefined ? null : outcome.result
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
        return { ok: true, result }
      }
      if (mayFail && !isRetryable(outcome.error)) {
        this.emit({ type: 'branch-failed', branch: id, op, attempt, ms, error: outcome.error })
        return outcome
      }
      await this.retryLater(id, op, attempt, ms, outcome.error)
    }
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

/** Changes of one branch operation folded into one (later fields win): a statement changes a row once. */
function mergeBranches(changes: readonly BranchChange[]): BranchChange[] {
  const byKey = new Map<string, BranchChange>()
  for (const c of changes) {
    const key = `${c.id}/${c.op}`
    byKey.set(key, { ...byKey.get(key), ...c })
  }
  return [...byKey.values()]
}
