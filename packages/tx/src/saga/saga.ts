import { type BranchFn, checkBranchFn, checkId } from '../branch.js'
import type { TxDefinition } from '../coordinator/definition.js'
import type { RunOptions, RunResult, Starter } from '../coordinator/run-result.js'
import type { TxRun } from '../coordinator/tx-run.js'
import { type ForwardStep, runForward } from './saga-forward.js'

/** One saga step: a forward action and the compensation that undoes it. */
export interface SagaStep<I = unknown> {
  /** The forward operation. May fail (throw): the saga then compensates. */
  action: BranchFn<I>
  /** Undoes `action`; must eventually succeed (retried, then parked). Also called for the step that failed. */
  compensate?: BranchFn<I>
  /**
   * The steps (already defined) whose actions must succeed before this one starts: a DAG; steps whose
   * dependencies are met run concurrently. Default: the previous step (a sequential saga). `[]`: none.
   */
  after?: readonly string[]
}

/**
 * A saga: forward steps in order, compensations in reverse order when one fails (the failed step included,
 * since it may have done part of its work). Built with {@link Saga.step}, started with {@link Saga.run}.
 */
export interface Saga<I = unknown> {
  readonly name: string
  /** Adds a step; ids are unique within the saga. Define every step before the first `run`. */
  step(id: string, step: SagaStep<I>): Saga<I>
  /** Starts a transaction; with `wait: false`, resolves once it is durably `submitted`. */
  run(input: I, options?: RunOptions): Promise<RunResult>
}

interface Step extends ForwardStep {
  readonly compensate: BranchFn | undefined
}

/** Builds a saga and registers its definition with the coordinator (so recovery can resume it). */
export function createSaga<I>(name: string, start: Starter, register: (def: TxDefinition) => void): Saga<I> {
  checkId('saga name', name)
  const steps: Step[] = []
  let started = false
  const def: TxDefinition = {
    kind: 'saga',
    name,
    branches: () =>
      steps.flatMap((s, seq) => [
        { id: s.id, op: 'action' as const, seq },
        { id: s.id, op: 'compensate' as const, seq },
      ]),
    knows: (ids) => ids.every((id) => steps.some((s) => s.id === id)),
    drive: (run) => driveSaga(run, steps),
  }
  register(def)
  const saga: Saga<I> = {
    name,
    step(id, step) {
      checkId(`saga "${name}" step id`, id)
      if (started) throw new TypeError(`latchkey-tx: saga "${name}": define every step before the first run()`)
      if (steps.some((s) => s.id === id)) throw new RangeError(`latchkey-tx: saga "${name}" already has a step "${id}"`)
      if (typeof step !== 'object' || step === null) {
        throw new TypeError(`latchkey-tx: saga "${name}" step "${id}" needs { action, compensate? }`)
      }
      const action = checkBranchFn(`saga "${name}" step "${id}" action`, step.action)
      const compensate =
        step.compensate === undefined
          ? undefined
          : checkBranchFn(`saga "${name}" step "${id}" compensate`, step.compensate)
      steps.push({ id, action, compensate, after: checkAfter(name, id, step.after, steps) })
      return saga
    },
    run(input, options) {
      if (steps.length === 0) return Promise.reject(new TypeError(`latchkey-tx: saga "${name}" has no steps`))
      started = true
      return start(def, input, options, false)
    },
  }
  return saga
}

async function driveSaga(run: TxRun, steps: readonly Step[]): Promise<void> {
  if (run.status === 'submitted' && (await runForward(run, steps))) {
    await run.transition('succeeded')
    return
  }
  // Aborting: undo every step that started, in reverse definition order (a reverse topological order of the
  // DAG: a step is undone only after every step that came after it); a step that never started has nothing to undo.
  for (const step of [...steps].reverse()) {
    if (run.branch(step.id, 'action').status === 'pending') continue
    if (run.branch(step.id, 'compensate').status === 'succeeded') continue
    const compensate = step.compensate ?? (() => null)
    await run.call(step.id, 'compensate', compensate, false)
  }
  await run.transition('failed')
}

function checkAfter(name: string, id: string, after: unknown, earlier: readonly Step[]): readonly string[] {
  if (after === undefined) {
    const previous = earlier.at(-1)
    return previous === undefined ? [] : [previous.id]
  }
  if (!Array.isArray(after)) {
    throw new TypeError(`latchkey-tx: saga "${name}" step "${id}" after must be an array of step ids`)
  }
  for (const dep of after) {
    if (!earlier.some((s) => s.id === dep)) {
      throw new RangeError(
        `latchkey-tx: saga "${name}" step "${id}" comes after ${JSON.stringify(dep)}, which is not a step defined before it`,
      )
    }
  }
  return [...after] as string[]
}
