/** The public shapes of a 3PC participant: its options, the context its functions get, its answers and events. */
import { TxError } from '../errors.js'
import type { Isolation } from '../fastify/local-tx.js'
import type { DecidedBy, ParticipantState, StateRow } from './participant-sql.js'
import type { ThreePhaseParticipant } from './three-phase.js'

/** What the participant's own functions receive. */
export interface ThreePhaseContext<I = unknown> {
  readonly gid: string
  readonly branch: string
  readonly input: I
  /** `timeout` when the participant acts on its own because the coordinator went silent. */
  readonly by: DecidedBy
}

/** A participant's business functions, each run inside a local transaction on its own database. */
export interface ThreePhaseParticipantOptions<I = unknown> {
  /** The participant's own database: a pg Pool, a mysql2/promise pool or a better-sqlite3 database. */
  db: unknown
  /**
   * How long the participant waits for the coordinator's next message: a `voted` participant that hears no
   * preCommit within it aborts, a `precommitted` one that hears neither doCommit nor abort commits. It must
   * exceed the coordinator's whole voting and preCommit round. Default 10 000.
   */
  timeoutMs?: number
  /** How often deadlines are checked. Default min(1 000, timeoutMs / 4). */
  checkEveryMs?: number
  /** The vote (no locks may be held afterwards). Default: yes. */
  canCommit?: (trx: unknown, ctx: ThreePhaseContext<I>) => boolean | Promise<boolean>
  /** Prepare and lock: after it the commit must be certain to succeed. Throwing refuses (the transaction aborts). */
  preCommit: (trx: unknown, ctx: ThreePhaseContext<I>) => unknown
  /** Apply what preCommit prepared: on doCommit, or on the participant's own timeout. */
  doCommit: (trx: unknown, ctx: ThreePhaseContext<I>) => unknown
  /** Release what preCommit prepared (only called when preCommit ran). */
  abort?: (trx: unknown, ctx: ThreePhaseContext<I>) => unknown
  /** The state table. Default `latchkey_tx_3pc` (created by `start()`). */
  table?: string
  isolation?: Isolation
  /** Every state change, after its local transaction committed. */
  onEvent?: (event: ParticipantEvent) => void
}

/** A participant's state change (or a failed deadline check: `type: 'error'`). */
export interface ParticipantEvent {
  readonly type: ParticipantState | 'error'
  readonly gid: string
  readonly branch: string
  readonly by?: DecidedBy
  readonly error?: unknown
}

/** What the participant answers the coordinator: its state after the message. */
export interface ParticipantAnswer {
  readonly state: ParticipantState
  readonly decidedBy: DecidedBy | null
}

/** A message from the coordinator (what `http()` branches POST). */
export interface ThreePhaseMessage {
  readonly gid: string
  readonly branch: string
  readonly op: string
  readonly input?: unknown
}

/** The participant refuses: a no vote, or a preCommit for a transaction it already aborted. HTTP 409. */
export class ThreePhaseRefusal extends TxError {
  override name = 'ThreePhaseRefusal'
  constructor(message: string, gid: string) {
    super(message, { code: 'TX_3PC_REFUSED', gid })
  }
}

/** A running 3PC participant (see {@link threePhaseParticipant}). */
export interface ThreePhaseParticipantHandle<I = unknown> {
  /** Creates the state table, then checks deadlines every `checkEveryMs` (rows left by a previous run too). */
  start(): Promise<void>
  /** Applies one coordinator message; rejects with {@link ThreePhaseRefusal} for a no. */
  handle(message: ThreePhaseMessage): Promise<ParticipantAnswer>
  /** The participant as `tc.threePhase` takes it, in the same process. */
  branch(): ThreePhaseParticipant<I>
  /** The stored state of one transaction. */
  state(gid: string, branch: string): Promise<StateRow | undefined>
  /** Acts on every passed deadline now; resolves with how many rows it moved. */
  checkTimeouts(): Promise<number>
  /** Stops the deadline checks (waits for one in progress). Never closes `db`. */
  close(): Promise<void>
}
