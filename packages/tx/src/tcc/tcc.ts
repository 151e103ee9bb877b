import { type BranchFn, checkBranchFn, checkId } from '../branch.js'
import type { TxDefinition } from '../coordinator/definition.js'
import type { RunOptions, RunResult, Starter } from '../coordinator/run-result.js'
import type { TxRun } from '../coordinator/tx-run.js'

/** A TCC participant: reserve (`try`), then make it final (`confirm`) or release it (`cancel`). */
export interface TccParticipant<I = unknown> {
  /** Reserves; may fail (throw), which cancels the whole transaction. */
  try: BranchFn<I>
  /** Makes the reservation final; must eventually succeed (retried, then parked). */
  confirm: BranchFn<I>
  /** Releases the reservation; must eventually succeed, and may arrive before (or instead of) `try`. */
  cancel: BranchFn<I>
}

/** A TCC transaction over named participants. */
export interface Tcc<I = unknown> {
  readonly name: string
  /** Tries every participant in order; all ok → confirms all; one fails or `timeoutMs` passes → cancels all. */
  run(input: I, options?: RunOptions): Promise<RunResult>
}

const OPS = ['try', 'confirm', 'cancel'] as const

/** Builds a TCC transaction and registers its definition with the coordinator. */
export function createTcc<I>(
  name: string,
  participants: Record<string, TccParticipant<I>>,
  start: Starter,
  register: (def: TxDefinition) => void,
): Tcc<I> {
  checkId('tcc name', name)
  if (typeof participants !== 'object' || participants === null || Object.keys(participants).length === 0) {
    throw new TypeError(`latchkey-tx: tcc "${name}" needs participants { id: { try, confirm, cancel } }`)
  }
  const list = Object.entries(participants).map(([id, p]) => {
    checkId(`tcc "${name}" participant id`, id)
    if (typeof p !== 'object' || p === null) {
      throw new TypeError(`latchkey-tx: tcc "${name}" participant "${id}" needs { try, confirm, cancel }`)
    }
    const fns = Object.fromEntries(
      OPS.map((op) => [op, checkBranchFn(`tcc "${name}" participant "${id}" ${op}`, p[op])]),
    )
    return { id, fns: fns as Record<(typeof OPS)[number], BranchFn> }
  })
  const def: TxDefinition = {
    kind: 'tcc',
    name,
    branches: () => list.flatMap((p, seq) => OPS.map((op) => ({ id: p.id, op, seq }))),
    knows: (ids) => ids.every((id) => list.some((p) => p.id === id)),
    drive: (run) => driveTcc(run, list),
  }
  register(def)
  return { name, run: (input, options) => start(def, input, options, true) }
}

type Participant = { readonly id: string; readonly fns: Record<(typeof OPS)[number], BranchFn> }

async function driveTcc(run: TxRun, participants: readonly Participant[]): Promise<void> {
  if (run.status === 'prepared') {
    for (const p of participants) {
      if (run.branch(p.id, 'try').status === 'succeeded') continue
      const outcome = await run.call(p.id, 'try', p.fns.try, true)
      if (outcome.ok) continue
      await run.abortAfter(p.id, 'try', outcome.error)
      break
    }
    // A try still running when the deadline passed (it is not interrupted) ends the phase late: cancel it too.
    if (run.status === 'prepared' && run.pastDeadline()) await run.abortTimedOut()
    // Every try succeeded in time: the decision to confirm is durable before the first confirm is sent.
    if (run.status === 'prepared') await run.transition('submitted')
  }
  if (run.status === 'submitted') {
    for (const p of participants) {
      if (run.branch(p.id, 'confirm').status !== 'succeeded') await run.call(p.id, 'confirm', p.fns.confirm, false)
    }
    await run.transition('succeeded')
    return
  }
  // Cancel every participant, tried or not: a try may be in flight or lost, and the barrier makes a cancel
  // without a try a no-op (null compensation) and refuses the late try (hanging).
  for (const p of [...participants].reverse()) {
    if (run.branch(p.id, 'cancel').status !== 'succeeded') await run.call(p.id, 'cancel', p.fns.cancel, false)
  }
  await run.transition('failed')
}
