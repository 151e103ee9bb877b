import type { Msg, MsgOptions } from '../msg/msg.js'
import type { NotifyOptions } from '../notify/notify.js'
import type { Saga } from '../saga/saga.js'
import type { ListFilter } from '../store/types.js'
import type { Tcc, TccParticipant } from '../tcc/tcc.js'
import type { ThreePhase, ThreePhaseParticipant } from '../three-phase/three-phase.js'
import type { TxRecord, TxSummary } from '../types.js'
import type { XaBody } from '../xa/xa.js'
import type { CoordinatorOptions } from './options.js'
import type { RunOptions, RunResult } from './run-result.js'
import { TxCoordinator } from './tx-coordinator.js'

/** What `tc.xa` resolves to: the run's result and what the body returned. */
export type XaResult<R> = RunResult & { readonly value?: R | undefined }

/** The transaction coordinator (TC) returned by {@link createCoordinator}. */
export interface Coordinator {
  /** A saga named `name` (registered so that any coordinator with the same definition can resume it). */
  saga<I = unknown>(name: string): Saga<I>
  /** A TCC transaction over `participants` (registered like a saga). */
  tcc<I = unknown>(name: string, participants: Record<string, TccParticipant<I>>): Tcc<I>
  /**
   * A transactional message named `name` (registered like a saga): `.add(branch)` its branches, then
   * `.doAndSubmit(db, local)` per message. A lost submit is settled by the check-back (see {@link MsgOptions}).
   */
  msg<I = unknown>(name: string, options?: MsgOptions): Msg<I>
  /**
   * A best-effort notification: POSTs `body` to `url`, then retries on `schedule`, then parks it. Durable
   * before it resolves; any coordinator on the log resumes it. `tc.retry(gid)` replays a parked one.
   */
  notify(options: NotifyOptions): Promise<RunResult>
  /**
   * A three-phase commit (canCommit / preCommit / doCommit) over `participants` (opt-in; registered like a saga).
   * Unlike 2PC its participants do not block when the coordinator dies after preCommit: they commit on their own
   * timeout. A partition that splits them can leave a mixed outcome (`TxHeuristicError`): see the README.
   */
  threePhase<I = unknown>(name: string, participants: Record<string, ThreePhaseParticipant<I>>): ThreePhase<I>
  /**
   * Runs an XA two-phase commit: `body` opens branches with `x.branch(resource, fn)` (each prepared on its own
   * connection), then the commit decision is logged and every branch committed; if the body or a branch throws,
   * every branch is rolled back (status `failed`, `error` a `TxAbortedError`). Rejects with
   * `XaUnsupportedError` when a database cannot do XA. In-doubt branches of a crashed coordinator are finished
   * by recovery as the log says (register the databases in `resources`).
   */
  xa<R>(name: string, body: XaBody<R>, options?: RunOptions): Promise<XaResult<R>>
  /** The transaction with its branches and history, or undefined. */
  get(gid: string): Promise<TxRecord | undefined>
  /** Transactions, newest first (default limit 100). */
  list(filter?: ListFilter): Promise<TxSummary[]>
  /** Resumes a parked transaction where it stopped, with a fresh retry budget. */
  retry(gid: string): Promise<RunResult>
  /** Aborts a transaction whose forward phase is parked or stalled: compensates (cancels) what was done. */
  abort(gid: string): Promise<RunResult>
  /** Runs one recovery sweep now (the timer runs them every `recoverEveryMs` when `recover` is on). */
  recoverNow(): Promise<void>
  /** Stops sweeping and driving (unfinished transactions stay in the log for recovery), closes what it opened. */
  close(): Promise<void>
}

/**
 * Creates a transaction coordinator over a durable log. Validates every option before any I/O.
 *
 * @example
 * const tc = createCoordinator({ store: 'sqlite:./tx.db' })
 * const order = tc.saga('order').step('reserve', { action: reserve, compensate: release })
 * const r = await order.run({ sku: 'A', qty: 1 })   // r.status: 'succeeded' | 'failed' | 'parked'
 * await tc.close()
 */
export function createCoordinator(options: CoordinatorOptions): Coordinator {
  return new TxCoordinator(options)
}
