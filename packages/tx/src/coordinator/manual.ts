import { TxError } from '../errors.js'
import type { TxChange } from '../store/types.js'
import type { TxRecord } from '../types.js'
import { KIND_TRAITS } from './kind-traits.js'

/** The transition `tc.retry(gid)` writes: back to where the transaction was parked, with fresh retry budgets. */
export function retryChange(record: TxRecord): TxChange {
  if (record.status !== 'parked' || record.parkedFrom === null) {
    throw new TxError(`Transaction ${record.gid} is ${record.status}, not parked; only a parked one can be retried`, {
      code: 'NOT_PARKED',
      gid: record.gid,
    })
  }
  return {
    status: record.parkedFrom,
    parkedFrom: null,
    branches: record.branches
      .filter((b) => b.status !== 'succeeded' && b.attempts > 0)
      .map((b) => ({ id: b.id, op: b.op, attempts: 0 })),
    event: { type: 'retried', detail: `back to ${record.parkedFrom}` },
  }
}

/**
 * The transition `tc.abort(gid)` writes: a forward phase (running or parked) turns to `aborting`. A TCC that
 * reached `submitted` has decided to confirm, and a compensation cannot be aborted: both are refused.
 */
export function abortChange(record: TxRecord): TxChange {
  const phase = record.status === 'parked' ? record.parkedFrom : record.status
  if (phase !== KIND_TRAITS[record.kind].forward) {
    const hint = record.status === 'parked' ? '; its compensation is parked: fix the cause and tc.retry(gid)' : ''
    throw new TxError(`Transaction ${record.gid} is ${record.status}; only a forward phase can be aborted${hint}`, {
      code: 'NOT_ABORTABLE',
      gid: record.gid,
    })
  }
  return {
    status: 'aborting',
    parkedFrom: null,
    error: 'aborted by tc.abort()',
    branches: record.branches.filter((b) => b.status !== 'succeeded').map((b) => ({ id: b.id, op: b.op, attempts: 0 })),
    event: { type: 'aborting', detail: 'aborted by tc.abort()' },
  }
}
