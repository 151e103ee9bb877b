import { type BranchFn, checkBranchFn, checkId } from '../branch.js'
import { crashPoint } from '../coordinator/crash-point.js'
import type { TxDefinition } from '../coordinator/definition.js'
import type { RunOptions, RunResult, Starter } from '../coordinator/run-result.js'
import type { TxRun } from '../coordinator/tx-run.js'
import { describe, TxError } from '../errors.js'
import { TxHeuristicError } from './heuristic-error.js'

/**
 * A three-phase-commit participant, as the coordinator sees it. `threePhaseParticipant(...).branch()` (in
 * process) and `threePhaseHttp(url)` (over HTTP) build one with the participant's timeouts kept durably.
 */
export interface ThreePhaseParticipant<I = unknown> {
  /** The vote: "could you commit?" No locks are taken yet. Throwing (or returning `false`) votes no. */
  canCommit: BranchFn<I>
  /**
   * Prepare: take the locks, make the commit certain to succeed, and ack by returning. Throwing is a refusal
   * (the transaction aborts). From the ack on, the participant commits on its own if the coordinator goes silent.
   */
  preCommit: BranchFn<I>
  /** Commit what preCommit prepared; must eventually succeed (retried, then parked). */
  doCommit: BranchFn<I>
  /** Release what preCommit prepared (or nothing); must eventually succeed, and may come before canCommit. */
  abort: BranchFn<I>
}

/** A three-phase-commit transaction over named participants. */
export interface ThreePhase<I = unknown> {
  readonly name: string
  /**
   * canCommit to every participant; all yes → the preCommit decision is logged and preCommit sent to every
   * participant; all acked → the commit decision is logged and doCommit sent to all. A no, a missing answer or
   * `timeoutMs` passing before the preCommit round ends → abort to every participant.
   */
  run(input: I, options?: RunOptions): Promise<RunResult>
}

const OPS = ['canCommit', 'preCommit', 'doCommit', 'abort'] as const
type Op = (typeof OPS)[number]
type Participant = { readonly id: string; readonly fns: Record<Op, BranchFn> }

/** Builds a 3PC transaction and registers its definition with the coordinator. */
export function createThreePhase<I>(
  name: string,
  participants: Record<string, ThreePhaseParticipant<I>>,
  start: Starter,
  register: (def: TxDefinition) => void,
): ThreePhase<I> {
  checkId('threePhase name', name)
  if (typeof participants !== 'object' || participants === null || Object.keys(participants).length === 0) {
    throw new TypeError(
      `latchkey-tx: threePhase "${name}" needs participants { id: { canCommit, preCommit, doCommit, abort } }`,
    )
  }
  const list: Participant[] = Object.entries(participants).map(([id, p]) => {
    checkId(`threePhase "${name}" participant id`, id)
    if (typeof p !== 'object' || p === null) {
      throw new TypeError(
        `latchkey-tx: threePhase "${name}" participant "${id}" needs { canCommit, preCommit, doCommit, abort }`,
      )
    }
    const fns = Object.fromEntries(
      OPS.map((op) => [op, checkBranchFn(`threePhase "${name}" participant "${id}" ${op}`, p[op])]),
    )
    return { id, fns: fns as Record<Op, BranchFn> }
  })
  const def: TxDefinition = {
    kind: '3pc',
    name,
    branches: () => list.flatMap((p, seq) => OPS.map((op) => ({ id: p.id, op, seq }))),
    knows: (ids) => ids.every((id) => list.some((p) => p.id === id)),
    drive: (run) => driveThreePhase(run, list),
  }
  register(def)
  return { name, run: (input, options) => start(def, input, options, true) }
}

/**
 * A vote or an ack that does not come is a no: the coordinator does not retry canCommit or preCommit (its
 * participants are timing out meanwhile), so every failure, retryable or not, ends the forward phase.
 */
function oneShot(id: string, op: Op, fn: BranchFn): BranchFn {
  return async (ctx) => {
    let result: unknown
    try {
      result = await fn(ctx)
    } catch (error) {
      throw new TxError(`${op} of "${id}" got no yes: ${describe(error)}`, { code: 'TX_3PC_NO', cause: error })
    }
    if (result === false) throw new TxError(`${op} of "${id}" voted no`, { code: 'TX_3PC_NO' })
    return result
  }
}

/** Whether the preCommit decision is in the log (then a recovering coordinator must not go back to voting). */
function preCommitDecided(run: TxRun, participants: readonly Participant[]): boolean {
  return (
    run.record.history.some((h) => h.type === 'pre-commit') ||
    participants.some((p) => run.branch(p.id, 'preCommit').status !== 'pending')
  )
}

async function forwardPhase(run: TxRun, participants: readonly Participant[]): Promise<void> {
  if (!preCommitDecided(run, participants)) {
    for (const p of participants) {
      if (run.branch(p.id, 'canCommit').status === 'succeeded') continue
      const vote = await run.call(p.id, 'canCommit', oneShot(p.id, 'canCommit', p.fns.canCommit), true)
      if (!vote.ok) return run.abortAfter(p.id, 'canCommit', vote.error)
    }
    if (run.pastDeadline()) return run.abortTimedOut()
    await run.write({ event: { type: 'pre-commit', detail: 'every participant voted yes' } })
    crashPoint('after-log:status', 'pre-commit')
    run.emit({ type: 'pre-commit' })
  }
  for (const p of participants) {
    if (run.branch(p.id, 'preCommit').status === 'succeeded') continue
    const ack = await run.call(p.id, 'preCommit', oneShot(p.id, 'preCommit', p.fns.preCommit), true)
    // The abort this leads to is 3PC's weak spot: participants that did get preCommit commit on their own
    // timeout if the abort does not reach them in time (a partition); the commit phase detects it.
    if (!ack.ok) return run.abortAfter(p.id, 'preCommit', ack.error)
  }
  // Every participant acked: each one commits on its own timeout from now on, so the deadline no longer
  // matters and the only consistent decision is commit.
  await run.transition('submitted')
}

async function driveThreePhase(run: TxRun, participants: readonly Participant[]): Promise<void> {
  if (run.status === 'prepared') await forwardPhase(run, participants)
  if (run.status === 'submitted') {
    for (const p of participants) {
      if (run.branch(p.id, 'doCommit').status !== 'succeeded') await run.call(p.id, 'doCommit', p.fns.doCommit, false)
    }
    const aborted = participants.filter((p) => said(run.branch(p.id, 'doCommit').result, 'aborted')).map((p) => p.id)
    if (aborted.length > 0) {
      const committed = participants.map((p) => p.id).filter((id) => !aborted.includes(id))
      await heuristic(run, new TxHeuristicError(run.gid, committed, aborted))
    }
    await run.transition('succeeded')
    return
  }
  // Abort every participant, asked or not: one may have voted or pre-committed without its answer arriving.
  for (const p of [...participants].reverse()) {
    if (run.branch(p.id, 'abort').status !== 'succeeded') await run.call(p.id, 'abort', p.fns.abort, false)
  }
  const committed = participants.filter((p) => said(run.branch(p.id, 'abort').result, 'committed')).map((p) => p.id)
  if (committed.length > 0) {
    const aborted = participants.map((p) => p.id).filter((id) => !committed.includes(id))
    const error = new TxHeuristicError(run.gid, committed, aborted)
    await heuristic(run, error)
    await run.transition('failed', { error: error.message }, error.message)
    return
  }
  await run.transition('failed')
}

/** Records a mixed outcome in the log and makes it the run's failure. */
async function heuristic(run: TxRun, error: TxHeuristicError): Promise<void> {
  run.failure = { branch: error.committed.length > 0 ? (error.committed[0] ?? '') : '', cause: error }
  await run.write({ error: error.message, event: { type: 'heuristic-mixed', detail: error.message } })
  run.emit({ type: 'heuristic-mixed', error })
}

/** Whether a participant's answer reports the state `state` (what `threePhaseParticipant` answers). */
function said(result: unknown, state: 'committed' | 'aborted'): boolean {
  return typeof result === 'object' && result !== null && (result as { state?: unknown }).state === state
}
