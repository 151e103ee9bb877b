import type { BranchFn } from '../branch.js'
import { Parked } from '../coordinator/drive-errors.js'
import type { TxRun } from '../coordinator/tx-run.js'

/** A saga step as the driver sees it: `after` lists the steps whose actions must have succeeded first. */
export interface ForwardStep {
  readonly id: string
  readonly action: BranchFn
  readonly after: readonly string[]
}

/**
 * The forward phase of a saga as a DAG: every step whose `after` steps have succeeded runs, concurrently with
 * the other ready ones (a sequential saga is the chain where each step comes after the previous one). When a
 * step fails, no new step starts; the ones in flight finish (their effects must be known before compensating),
 * then `aborting` is written. A park or a stop (lease lost, closing, overtaken) is rethrown once nothing is in
 * flight. Resolves with whether every step succeeded.
 */
export async function runForward(run: TxRun, steps: readonly ForwardStep[]): Promise<boolean> {
  const inFlight = new Map<string, Promise<void>>()
  let failed: { id: string; error: unknown } | undefined
  let parked: Parked | undefined
  let stopped: unknown
  const succeeded = (id: string) => run.branch(id, 'action').status === 'succeeded'
  for (;;) {
    if (failed === undefined && parked === undefined && stopped === undefined) {
      for (const step of steps) {
        if (succeeded(step.id) || inFlight.has(step.id) || !step.after.every(succeeded)) continue
        const settled = run.call(step.id, 'action', step.action, true).then(
          (outcome) => {
            if (!outcome.ok) failed ??= { id: step.id, error: outcome.error }
          },
          (error: unknown) => {
            if (error instanceof Parked) parked ??= error
            else stopped ??= error
          },
        )
        inFlight.set(
          step.id,
          settled.finally(() => inFlight.delete(step.id)),
        )
      }
    }
    if (inFlight.size === 0) break
    await Promise.race(inFlight.values())
  }
  if (stopped !== undefined) throw stopped
  if (failed !== undefined) {
    await run.abortAfter(failed.id, 'action', failed.error)
    return false
  }
  if (parked !== undefined) throw parked
  return true
}
