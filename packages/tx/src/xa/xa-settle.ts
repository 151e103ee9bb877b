import { backoffMs, sleep } from '../coordinator/backoff.js'
import { Parked, StopDriving } from '../coordinator/drive-errors.js'
import type { RetryPolicy } from '../coordinator/options.js'
import type { TxRun } from '../coordinator/tx-run.js'
import { describe, TxError, TxParkedError } from '../errors.js'
import type { TxRecord } from '../types.js'
import type { XaResources } from './xa-resources.js'
import type { Xid } from './xid.js'

/** A branch as the log knows it: written (`xa-branch`, with its resource) before its `XA START`. */
export interface LoggedBranch {
  readonly xid: Xid
  /** The resource's identity, `<dialect>:<host>:<port>/<database>`. */
  readonly resource: string
}

/** What phase 2 and recovery need from the coordinator. */
export interface XaDeps {
  readonly resources: XaResources
  readonly retry: RetryPolicy
}

/** The history event written before each branch starts. */
export const XA_BRANCH_EVENT = 'xa-branch'

/** The branches of an XA transaction, from its history. */
export function loggedBranches(record: TxRecord): LoggedBranch[] {
  return record.history.flatMap((h) => {
    if (h.type !== XA_BRANCH_EVENT || h.branch === null || h.detail === null) return []
    const { resource } = JSON.parse(h.detail) as { resource: string }
    return [{ xid: { gid: record.gid, branch: h.branch }, resource }]
  })
}

/**
 * Commits (or rolls back) each branch from a fresh connection to its resource, whatever state it is in: a
 * branch that is no longer prepared was finished before, which counts as done (the log's decision is the only
 * one ever applied, so "finished" means "finished this way"). Every branch is tried in each round, so one that
 * cannot be finished yet (held by another session, its database down or unknown here) does not keep the others'
 * locks; the rest are retried with the coordinator's backoff, then the transaction is parked.
 */
export async function settleBranches(
  run: TxRun,
  branches: readonly LoggedBranch[],
  commit: boolean,
  deps: XaDeps,
): Promise<void> {
  const op = commit ? 'commit' : 'rollback'
  let left = [...branches]
  for (let attempt = 1; left.length > 0; attempt++) {
    if (run.signal.aborted) throw new StopDriving('lease lost or coordinator closing')
    const failures: { b: LoggedBranch; error: unknown }[] = []
    for (const b of left) {
      const error = await settleOne(run, b, commit, deps)
      if (error !== undefined) failures.push({ b, error })
    }
    left = failures.map((f) => f.b)
    const first = failures[0]
    if (first !== undefined) await retryOrPark(run, first.b, op, attempt, first.error, deps.retry)
  }
}

/** Finishes one branch; returns why it could not (undefined when it is finished). */
async function settleOne(run: TxRun, b: LoggedBranch, commit: boolean, deps: XaDeps): Promise<unknown> {
  try {
    const resource = await deps.resources.byIdentity(b.resource)
    if (resource === undefined) {
      return new TxError(
        `XA resource ${b.resource} of branch ${b.xid.branch} is not known to this coordinator, or none of its resources could be reached to learn it: pass its pool in createCoordinator({ resources })`,
        { code: 'XA_UNKNOWN_RESOURCE', gid: run.gid, retryable: true },
      )
    }
    if (await resource.settle(b.xid, commit)) return undefined
    return new TxError(`branch ${b.xid.branch} is still prepared and held by another session`, {
      code: 'XA_BRANCH_BUSY',
      gid: run.gid,
      retryable: true,
    })
  } catch (error) {
    return error
  }
}

async function retryOrPark(
  run: TxRun,
  b: LoggedBranch,
  op: string,
  attempt: number,
  error: unknown,
  retry: RetryPolicy,
): Promise<void> {
  const message = describe(error)
  const detail = `${op} on ${b.resource}, attempt ${attempt}: ${message}`
  if (attempt >= retry.attempts) {
    const parked = new TxParkedError(run.gid, b.xid.branch, op, attempt, error)
    const from = run.status
    await run.write({
      status: 'parked',
      parkedFrom: from,
      error: parked.message,
      event: { type: 'parked', branch: b.xid.branch, detail: `from ${from}: ${detail}` },
    })
    run.emit({ type: 'parked', branch: b.xid.branch, attempt, error: parked })
    throw new Parked(parked)
  }
  const delay = backoffMs(attempt, retry)
  await run.write({ event: { type: 'xa-retry', branch: b.xid.branch, detail: `${detail}; next in ${delay} ms` } })
  run.emit({ type: 'xa-retry', branch: b.xid.branch, attempt, error })
  try {
    await sleep(delay, run.signal)
  } catch {
    throw new StopDriving('lease lost or coordinator closing')
  }
}

/**
 * Drives an XA transaction found in the log (its process died or stalled past its lease): phase 1 cannot go on
 * without the body that ran it, so `prepared` aborts; `submitted` (the commit decision) commits every branch;
 * `aborting` rolls every branch back. Branches are found in the log, so one on a resource whose prepare never
 * happened is simply already finished.
 */
export async function recoverXa(run: TxRun, deps: XaDeps): Promise<void> {
  if (run.status === 'prepared') {
    const reason = 'the coordinator running phase 1 stopped before the commit decision'
    run.failure = { branch: '', cause: new TxError(reason, { code: 'XA_PHASE1_LOST', gid: run.gid }) }
    await run.transition('aborting', { error: reason, parkedFrom: null }, reason)
  }
  const branches = loggedBranches(run.record)
  if (run.status === 'submitted') {
    await settleBranches(run, branches, true, deps)
    await run.transition('succeeded')
  } else if (run.status === 'aborting') {
    await settleBranches(run, branches, false, deps)
    await run.transition('failed')
  }
}
