import { checkId } from '../branch.js'
import type { TxDefinition } from '../coordinator/definition.js'
import { StopDriving } from '../coordinator/drive-errors.js'
import type { TxRun } from '../coordinator/tx-run.js'
import { describe, StaleCoordinatorError, TxTimeoutError } from '../errors.js'
import type { XaConnection, XaPool, XaResource } from './resource.js'
import { xaCrashPoint } from './xa-crash-point.js'
import { type LoggedBranch, recoverXa, settleBranches, XA_BRANCH_EVENT, type XaDeps } from './xa-settle.js'
import { MYSQL_XID_PART_MAX, type Xid } from './xid.js'

/**
 * The connection type a pool hands out: mysql2's `PoolConnection`, pg's `PoolClient`. (pg's `connect` is
 * overloaded with a callback form last, which a plain `infer` would read.)
 */
export type XaConnectionOf<P> = P extends { getConnection(): Promise<infer C> }
  ? C
  : P extends { connect(): Promise<infer C>; connect(callback: never): void }
    ? C
    : P extends { connect(): Promise<infer C> }
      ? C
      : never

/** What the body of `tc.xa` receives. */
export interface XaTx {
  /** The global transaction id (in every branch's XID). */
  readonly gid: string
  /**
   * Runs `fn` as one XA branch on a dedicated connection of `pool` (a mysql2/promise pool or a pg Pool):
   * `XA START` (PostgreSQL: `BEGIN`), `fn(connection)`, then `XA END` + `XA PREPARE` (`PREPARE TRANSACTION`).
   * Resolves to what `fn` returned once the branch is prepared; the commit comes after the body. Rejects when
   * `fn` throws (the branch is rolled back and the whole transaction aborts), or with `XaUnsupportedError`
   * when the database cannot do XA.
   */
  branch<P extends XaPool, T>(pool: P, fn: (connection: XaConnectionOf<P>) => T | Promise<T>): Promise<Awaited<T>>
  /** The same on a resource registered by name in `createCoordinator({ resources })`; type the connection. */
  branch<C, T>(resource: string, fn: (connection: C) => T | Promise<T>): Promise<Awaited<T>>
}

/** The body of an XA transaction: opens its branches, may return a value. */
export type XaBody<R> = (x: XaTx) => Promise<R>

type BranchState = 'opening' | 'active' | 'prepared' | 'rolled-back' | 'done'

/** A branch of the running transaction, with its connection. */
interface LiveBranch {
  readonly xid: Xid
  readonly resource: XaResource
  readonly identity: string
  conn: XaConnection | undefined
  state: BranchState
}

/** Checks the name and the gid length an XID can hold (MariaDB's gtrid limit), before any I/O. */
export function checkXaArgs(name: unknown, body: unknown, gid: string | undefined): void {
  checkId('xa name', name)
  if (typeof body !== 'function') {
    throw new TypeError(`latchkey-tx: xa "${String(name)}" needs a body async (x) => { await x.branch(pool, fn) }`)
  }
  if (gid !== undefined && Buffer.byteLength(gid) > MYSQL_XID_PART_MAX) {
    throw new RangeError(
      `latchkey-tx: an XA gid must be at most ${MYSQL_XID_PART_MAX} bytes (it is the XID's gtrid), received ${gid.length}`,
    )
  }
}

/** The definition of one `tc.xa` call: runs `body` (phase 1), logs the decision, then commits or rolls back. */
export function xaRunDefinition<R>(name: string, body: XaBody<R>, deps: XaDeps, out: { value?: R }): TxDefinition {
  return {
    kind: 'xa',
    name,
    branches: () => [],
    knows: () => true,
    drive: (run) => driveXa(run, body, deps, out),
  }
}

/** The definition recovery uses for any XA transaction found in the log (the body is gone with its process). */
export function xaRecoveryDefinition(name: string, deps: XaDeps): TxDefinition {
  return { kind: 'xa', name, branches: () => [], knows: () => true, drive: (run) => recoverXa(run, deps) }
}

async function driveXa<R>(run: TxRun, body: XaBody<R>, deps: XaDeps, out: { value?: R }): Promise<void> {
  if (run.status !== 'prepared') return recoverXa(run, deps)
  const live: LiveBranch[] = []
  const pending: Promise<unknown>[] = []
  let open = true
  let failed: unknown
  let failedBranch = 'body'
  let n = 0
  const x: XaTx = {
    gid: run.gid,
    branch: (resource: string | XaPool, fn: unknown) => {
      if (!open) return Promise.reject(new TypeError(`latchkey-tx: xa ${run.gid}: branch() after the body ended`))
      if (typeof fn !== 'function')
        return Promise.reject(new TypeError('latchkey-tx: x.branch needs a function (conn) => …'))
      const id = `b${++n}`
      const p = runBranch(run, deps, id, resource, fn as (c: unknown) => unknown, live)
      pending.push(
        p.catch((error: unknown) => {
          if (failed !== undefined) return
          failed = error
          failedBranch = id
        }),
      )
      return p as never
    },
  }
  try {
    try {
      out.value = await body(x)
    } catch (error) {
      failed ??= error
    }
    open = false
    // A branch the body did not await must reach its end (prepared or rolled back) before the decision.
    await Promise.all(pending)
    if (failed === undefined && run.pastDeadline()) {
      failed = new TxTimeoutError(run.gid, (run.record.deadlineAt ?? 0) - run.record.createdAt)
    }
    // This coordinator may no longer act on the transaction: whoever owns it now decides.
    if (failed instanceof StopDriving || failed instanceof StaleCoordinatorError) throw failed
    if (failed === undefined) await commitAll(run, live, deps)
    else await rollbackAll(run, live, deps, failedBranch, failed)
  } finally {
    // Whatever is not finished (lease lost, overtaken, a database error) is left to the server and to recovery:
    // closing the connection rolls back an open branch, and keeps a prepared one for the log's decision.
    for (const b of live) b.conn?.release(b.state !== 'done' && b.state !== 'rolled-back')
  }
}

async function runBranch(
  run: TxRun,
  deps: XaDeps,
  id: string,
  resourceOrName: string | XaPool,
  fn: (c: unknown) => unknown,
  live: LiveBranch[],
): Promise<unknown> {
  const resource = deps.resources.resolve(resourceOrName)
  await resource.check()
  const identity = await resource.identity()
  const xid = { gid: run.gid, branch: id }
  // Logged before XA START: recovery then knows every resource that may hold a branch of this transaction.
  await run.write({ event: { type: XA_BRANCH_EVENT, branch: id, detail: JSON.stringify({ resource: identity }) } })
  run.emit({ type: XA_BRANCH_EVENT, branch: id })
  const b: LiveBranch = { xid, resource, identity, conn: undefined, state: 'opening' }
  live.push(b)
  b.conn = await resource.open()
  await b.conn.start(xid)
  b.state = 'active'
  xaCrashPoint('xa:after-start', id)
  let result: unknown
  try {
    result = await fn(b.conn.raw)
  } catch (error) {
    await b.conn.rollbackActive(xid).then(
      () => {
        b.state = 'rolled-back'
      },
      () => undefined,
    )
    throw error
  }
  if (run.signal.aborted) throw new StopDriving('lease lost or coordinator closing')
  await b.conn.prepare(xid)
  b.state = 'prepared'
  xaCrashPoint('xa:after-prepare', id)
  run.emit({ type: 'xa-prepared', branch: id })
  return result
}

const logged = (live: readonly LiveBranch[]): LoggedBranch[] => live.map((b) => ({ xid: b.xid, resource: b.identity }))

/** The decision is durable before the first commit; each branch commits on its own connection. */
async function commitAll(run: TxRun, live: LiveBranch[], deps: XaDeps): Promise<void> {
  await run.transition('submitted', {}, `commit ${live.map((b) => `${b.xid.branch}@${b.identity}`).join(', ')}`)
  for (const b of live) {
    await b.conn
      ?.finish(b.xid, true)
      .then(() => {
        b.state = 'done'
      })
      .catch(() => undefined)
    if (b.state === 'done') xaCrashPoint('xa:after-commit', b.xid.branch)
  }
  // A commit that failed on its connection is retried from fresh connections (closing this one first: MariaDB
  // keeps a prepared branch attached to its session); finished ones count as done.
  const unfinished = live.filter((b) => b.state !== 'done')
  for (const b of unfinished) {
    b.conn?.release(true)
    b.conn = undefined
  }
  await settleBranches(run, logged(unfinished), true, deps)
  await run.transition('succeeded')
}

async function rollbackAll(
  run: TxRun,
  live: LiveBranch[],
  deps: XaDeps,
  branch: string,
  cause: unknown,
): Promise<void> {
  run.failure = { branch, cause }
  const message = describe(cause)
  await run.transition('aborting', { error: message, parkedFrom: null }, message)
  for (const b of live) {
    if (b.conn === undefined || b.state === 'rolled-back' || b.state === 'opening') continue
    const undo = b.state === 'prepared' ? b.conn.finish(b.xid, false) : b.conn.rollbackActive(b.xid)
    await undo.then(
      () => {
        b.state = 'rolled-back'
      },
      () => undefined,
    )
  }
  // A branch whose connection failed: closing it (in driveXa's finally) ends an open branch; a prepared one is
  // rolled back from a fresh connection here.
  for (const b of live) {
    if (b.state === 'rolled-back') continue
    b.conn?.release(true)
    b.conn = undefined
  }
  await settleBranches(run, logged(live.filter((b) => b.state !== 'rolled-back')), false, deps)
  for (const b of live) b.state = 'rolled-back'
  await run.transition('failed')
}
