import { describe, StaleCoordinatorError, TxAbortedError, TxError, TxTimeoutError } from '../errors.js'
import type { NewTx } from '../store/types.js'
import type { TxRecord, TxStatus } from '../types.js'
import type { TxDefinition } from './definition.js'
import { Parked, StopDriving } from './drive-errors.js'
import type { RunEnv } from './run-record.js'
import type { RunResult } from './run-result.js'
import type { TxLease } from './tx-lease.js'
import { TxRun } from './tx-run.js'

/**
 * Drives one transaction under `lease` until it is final, parked, or this coordinator must stop (lease lost,
 * closing, overtaken), then releases the lease. With `create`, a new transaction whose create is its first write.
 * Never rejects (the outcome is in the result), except with `DUPLICATE_GID` when that create finds the gid taken.
 */
export async function driveTransaction(
  def: TxDefinition,
  record: TxRecord,
  lease: TxLease,
  env: RunEnv,
  statusOf: (gid: string) => Promise<TxStatus | undefined>,
  create?: { tx: NewTx; after: () => void },
): Promise<RunResult> {
  const run = new TxRun(record, lease, env)
  if (create !== undefined) run.createWithFirstWrite(create.tx, create.after)
  let error: TxError | undefined
  let notCreated: TxError | undefined
  try {
    await def.drive(run)
  } catch (e) {
    if (e instanceof Parked) {
      error = e.error
      // A concurrent step's success held back for a next write that will not come: write it now.
      await run.flush().catch(() => undefined)
    } else if (e instanceof StaleCoordinatorError) {
      error = e
      run.emit({ type: 'stale', error: e })
    } else if (e instanceof TxError && e.code === 'DUPLICATE_GID') {
      notCreated = e
    } else if (!(e instanceof StopDriving)) {
      error = new TxError(`Driving ${record.gid} failed: ${describe(e)}`, {
        code: 'DRIVE_FAILED',
        gid: record.gid,
        cause: e,
        retryable: true,
      })
      run.emit({ type: 'drive-error', error: e })
    }
  } finally {
    await lease.release()
  }
  // The transaction never existed: `run()` rejects, as when its create is written before the drive.
  if (notCreated !== undefined) throw notCreated
  if (error === undefined && run.status === 'failed') error = abortError(run, record)
  // Overtaken: what this coordinator remembers is stale; report the log's status.
  const status =
    error instanceof StaleCoordinatorError
      ? ((await statusOf(record.gid).catch(() => undefined)) ?? run.status)
      : run.status
  return { gid: record.gid, status, results: run.results(), ...(error === undefined ? {} : { error }) }
}

function abortError(run: TxRun, record: TxRecord): TxError {
  const cause = run.failure?.cause ?? record.error ?? 'aborted'
  if (cause instanceof TxTimeoutError) return cause
  return new TxAbortedError(record.gid, run.failure?.branch, cause)
}
