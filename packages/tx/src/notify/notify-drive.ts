import { sleep } from '../coordinator/backoff.js'
import { Parked, StopDriving } from '../coordinator/drive-errors.js'
import type { TxRun } from '../coordinator/tx-run.js'
import { describe, TxError, TxParkedError } from '../errors.js'
import { deliver, type NotifyInput, reconcile } from './deliver.js'

/** The notification's one branch. */
export const DELIVER = 'deliver'
const OP = 'action' as const

/**
 * Drives a notification: a try now, then one after each wait of its schedule, then parked. Before every try but
 * the first it asks the reconcile URL (when given) whether the receiver already has it. Each try and each wait
 * is in the log: a coordinator that takes over after a crash waits for the rest of the interrupted wait (from
 * the logged failure), or tries again at once when the crash cut a try short.
 */
export async function driveNotify(run: TxRun): Promise<void> {
  // `tc.abort` of a parked notification: a human gave up on it.
  if (run.status === 'aborting') {
    await run.transition('failed', {}, 'notification given up by tc.abort()')
    return
  }
  if (run.status !== 'submitted') return
  const n = run.record.input as NotifyInput
  let tried = run.record.history.some((h) => h.type === 'branch-start' && h.branch === DELIVER)
  const b = run.branch(DELIVER, OP)
  if (b.attempts > 0 && b.status === 'pending') {
    const failedAt = run.record.history.findLast((h) => h.type === 'notify-retry')?.at ?? Date.now()
    await sleepUntil(run, failedAt + (n.schedule[b.attempts - 1] ?? 0))
  }
  for (;;) {
    if (tried && n.reconcile !== null && (await reconciled(run, n as NotifyInput & { reconcile: string }))) return
    const outcome = await run.call(DELIVER, OP, (ctx) => deliver(n, ctx.gid, ctx.signal), true)
    tried = true
    if (outcome.ok) {
      await run.transition('succeeded')
      return
    }
    const attempt = run.branch(DELIVER, OP).attempts
    const message = describe(outcome.error)
    const wait = n.schedule[attempt - 1]
    if (wait === undefined) await park(run, attempt, outcome.error)
    else {
      await run.write({
        branches: [{ id: DELIVER, op: OP, status: 'pending', lastError: message }],
        event: {
          type: 'notify-retry',
          branch: DELIVER,
          op: OP,
          detail: `try ${attempt} failed (${message}); next in ${wait} ms`,
        },
      })
      run.emit({ type: 'notify-retry', branch: DELIVER, op: OP, attempt, error: outcome.error })
      await sleepUntil(run, Date.now() + (wait ?? 0))
    }
  }
}

async function park(run: TxRun, attempt: number, error: unknown): Promise<never> {
  const parked = new TxParkedError(run.gid, DELIVER, OP, attempt, error)
  await run.write({
    status: 'parked',
    parkedFrom: 'submitted',
    error: parked.message,
    branches: [{ id: DELIVER, op: OP, status: 'failed', lastError: describe(error) }],
    event: {
      type: 'parked',
      branch: DELIVER,
      op: OP,
      detail: `schedule exhausted after ${attempt} tries: ${describe(error)}`,
    },
  })
  // The alert: an `onEvent` listener sees `parked` with the error; `tc.retry(gid)` replays it.
  run.emit({ type: 'parked', branch: DELIVER, op: OP, attempt, error: parked })
  throw new Parked(parked)
}

/** Asks the receiver; true (and the notification succeeded) when it already has it. */
async function reconciled(run: TxRun, n: NotifyInput & { reconcile: string }): Promise<boolean> {
  let answer: 'received' | 'missing'
  try {
    answer = await reconcile(n, run.gid, run.signal)
  } catch (error) {
    // No answer: send anyway (the receiver dedupes by the idempotency key).
    if (run.signal.aborted) throw new StopDriving('lease lost or coordinator closing')
    run.emit({ type: 'reconcile-error', branch: DELIVER, op: OP, error })
    return false
  }
  if (answer === 'missing') return false
  await run.write({
    branches: [{ id: DELIVER, op: OP, status: 'succeeded', result: { reconciled: true }, lastError: null }],
    event: { type: 'reconciled', branch: DELIVER, op: OP, detail: `${n.reconcile} says the receiver has it` },
  })
  run.emit({ type: 'reconciled', branch: DELIVER, op: OP })
  await run.transition('succeeded')
  return true
}

async function sleepUntil(run: TxRun, at: number): Promise<void> {
  const ms = at - Date.now()
  if (ms <= 0) return
  try {
    await sleep(ms, run.signal)
  } catch (error) {
    throw new StopDriving(
      `lease lost or coordinator closing (${error instanceof TxError ? error.code : describe(error)})`,
    )
  }
}
