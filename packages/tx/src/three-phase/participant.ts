import { checkId } from '../branch.js'
import { TxError } from '../errors.js'
import { type InTransaction, type Isolation, transactionRunner } from '../fastify/local-tx.js'
import { checkParticipantOptions } from './participant-options.js'
import {
  type DecidedBy,
  type ParticipantSql,
  type ParticipantState,
  participantSql,
  type StateRow,
} from './participant-sql.js'
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

type Step = { answer: ParticipantAnswer; refused?: string; event?: ParticipantEvent }

const answer = (row: Pick<StateRow, 'state' | 'decidedBy'>): ParticipantAnswer => ({
  state: row.state,
  decidedBy: row.decidedBy,
})

class Participant<I> implements ThreePhaseParticipantHandle<I> {
  private readonly inTx: InTransaction
  private readonly timeoutMs: number
  private readonly checkEveryMs: number
  private readonly table: string
  private timer: NodeJS.Timeout | undefined
  private checking: Promise<unknown> | undefined
  private stopped = false

  constructor(private readonly o: ThreePhaseParticipantOptions<I>) {
    const checked = checkParticipantOptions(o)
    this.timeoutMs = checked.timeoutMs
    this.checkEveryMs = checked.checkEveryMs
    this.table = checked.table
    this.inTx = transactionRunner(o.db, o.isolation)
  }

  private sql(trx: unknown): ParticipantSql {
    return participantSql(trx, this.table)
  }

  async start(): Promise<void> {
    await this.inTx((trx) => this.sql(trx).createTable())
    this.stopped = false
    this.schedule(0)
  }

  private schedule(ms: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.checking = this.checkTimeouts()
        .catch((error) => this.emit({ type: 'error', gid: '', branch: '', error }))
        .finally(() => this.schedule(this.checkEveryMs))
    }, ms)
    this.timer.unref()
  }

  async handle(message: ThreePhaseMessage): Promise<ParticipantAnswer> {
    const m = checkMessage(message)
    const step = await this.inTx(async (trx) => {
      const sql = this.sql(trx)
      const row = await sql.lock(m.gid, m.branch)
      const ctx = { gid: m.gid, branch: m.branch, input: (row?.input ?? m.input) as I, by: 'coordinator' as const }
      switch (m.op) {
        case 'canCommit':
          return this.canCommit(trx, sql, row, ctx)
        case 'preCommit':
          return this.preCommit(trx, sql, row, ctx)
        case 'doCommit':
          return this.doCommit(trx, sql, row, ctx)
        default:
          return this.abort(trx, sql, row, ctx)
      }
    })
    if (step.event !== undefined) this.emit(step.event)
    if (step.refused !== undefined) throw new ThreePhaseRefusal(step.refused, m.gid)
    return step.answer
  }

  private async canCommit(trx: unknown, sql: ParticipantSql, row: StateRow | undefined, ctx: Ctx<I>): Promise<Step> {
    if (row === undefined) {
      const yes = this.o.canCommit === undefined ? true : (await this.o.canCommit(trx, ctx)) === true
      const state = yes ? 'voted' : 'refused'
      const deadlineAt = yes ? Date.now() + this.timeoutMs : null
      await sql.insert({ ...ctx, state, decidedBy: yes ? null : 'coordinator', deadlineAt })
      const step: Step = {
        answer: { state, decidedBy: null },
        event: { type: state, gid: ctx.gid, branch: ctx.branch },
      }
      return yes ? step : { ...step, refused: `${ctx.branch} votes no on ${ctx.gid}` }
    }
    if (row.state === 'voted') {
      // The coordinator is alive and asking again (it recovered): wait a full timeout from now.
      await sql.update(ctx.gid, ctx.branch, {
        state: 'voted',
        decidedBy: null,
        deadlineAt: Date.now() + this.timeoutMs,
      })
      return { answer: answer(row) }
    }
    if (row.state === 'refused' || row.state === 'aborted') {
      return { answer: answer(row), refused: `${ctx.branch} has ${row.state} ${ctx.gid}: it votes no` }
    }
    return { answer: answer(row) }
  }

  private async preCommit(trx: unknown, sql: ParticipantSql, row: StateRow | undefined, ctx: Ctx<I>): Promise<Step> {
    if (row?.state === 'voted' || row?.state === 'precommitted') {
      if (row.state === 'voted') await this.o.preCommit(trx, ctx)
      await sql.update(ctx.gid, ctx.branch, {
        state: 'precommitted',
        decidedBy: null,
        deadlineAt: Date.now() + this.timeoutMs,
      })
      const event =
        row.state === 'voted' ? { type: 'precommitted' as const, gid: ctx.gid, branch: ctx.branch } : undefined
      return { answer: { state: 'precommitted', decidedBy: null }, ...(event === undefined ? {} : { event }) }
    }
    if (row?.state === 'committed') return { answer: answer(row) }
    // Never voted (or the vote was lost), or gave up already: refuse, and remember it so a late canCommit is a no.
    if (row === undefined) await sql.insert({ ...ctx, state: 'aborted', decidedBy: 'coordinator', deadlineAt: null })
    const state = row?.state ?? 'aborted'
    return {
      answer: { state, decidedBy: row?.decidedBy ?? 'coordinator' },
      refused: `${ctx.branch} cannot pre-commit ${ctx.gid}: it is ${row === undefined ? 'unknown here' : state}`,
    }
  }

  private async doCommit(trx: unknown, sql: ParticipantSql, row: StateRow | undefined, ctx: Ctx<I>): Promise<Step> {
    if (row?.state === 'precommitted') {
      await this.o.doCommit(trx, ctx)
      await sql.update(ctx.gid, ctx.branch, { state: 'committed', decidedBy: 'coordinator', deadlineAt: null })
      return {
        answer: { state: 'committed', decidedBy: 'coordinator' },
        event: { type: 'committed', gid: ctx.gid, branch: ctx.branch, by: 'coordinator' },
      }
    }
    // Already committed (by its own timeout, or a repeated doCommit), or aborted: report it; the coordinator
    // detects a mixed outcome from the answer.
    if (row?.state === 'committed' || row?.state === 'aborted') return { answer: answer(row) }
    throw new TxError(
      `doCommit of ${ctx.gid} reached ${ctx.branch} before its preCommit (${row?.state ?? 'unknown'})`,
      {
        code: 'TX_3PC_NOT_PREPARED',
        gid: ctx.gid,
      },
    )
  }

  private async abort(trx: unknown, sql: ParticipantSql, row: StateRow | undefined, ctx: Ctx<I>): Promise<Step> {
    if (row?.state === 'committed' || row?.state === 'aborted') return { answer: answer(row) }
    if (row?.state === 'precommitted') await this.o.abort?.(trx, ctx)
    const change = { state: 'aborted' as const, decidedBy: 'coordinator' as const, deadlineAt: null }
    if (row === undefined) await sql.insert({ ...ctx, ...change })
    else await sql.update(ctx.gid, ctx.branch, change)
    return { answer: answer(change), event: { type: 'aborted', gid: ctx.gid, branch: ctx.branch, by: 'coordinator' } }
  }

  async checkTimeouts(): Promise<number> {
    const now = Date.now()
    const due = await this.inTx((trx) => this.sql(trx).due(now, 100))
    let moved = 0
    for (const { gid, branch } of due) {
      const event = await this.inTx(async (trx): Promise<ParticipantEvent | undefined> => {
        const sql = this.sql(trx)
        const row = await sql.lock(gid, branch)
        // Re-read under the lock: a message may have moved it since the scan.
        if (row === undefined || row.deadlineAt === null || row.deadlineAt > Date.now()) return undefined
        if (row.state === 'voted') {
          // No preCommit in time: nobody can have committed yet, so aborting alone is safe.
          await sql.update(gid, branch, { state: 'aborted', decidedBy: 'timeout', deadlineAt: null })
          return { type: 'aborted', gid, branch, by: 'timeout' }
        }
        if (row.state !== 'precommitted') return undefined
        // Pre-committed and the coordinator went silent: every participant acked preCommit (or this one would
        // not have got it), so 3PC commits — the step that 2PC cannot take.
        await this.o.doCommit(trx, { gid, branch, input: row.input as I, by: 'timeout' })
        await sql.update(gid, branch, { state: 'committed', decidedBy: 'timeout', deadlineAt: null })
        return { type: 'committed', gid, branch, by: 'timeout' }
      })
      if (event === undefined) continue
      moved++
      this.emit(event)
    }
    return moved
  }

  branch(): ThreePhaseParticipant<I> {
    const call = (ctx: { gid: string; branch: string; op: string; input: I }) =>
      this.handle({ gid: ctx.gid, branch: ctx.branch, op: ctx.op, input: ctx.input })
    return { canCommit: call, preCommit: call, doCommit: call, abort: call }
  }

  state(gid: string, branch: string): Promise<StateRow | undefined> {
    return this.inTx((trx) => this.sql(trx).lock(gid, branch))
  }

  private emit(event: ParticipantEvent): void {
    try {
      this.o.onEvent?.(event)
    } catch {
      // A listener's failure must not change the participant's outcome.
    }
  }

  async close(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.checking
  }
}

type Ctx<I> = ThreePhaseContext<I>

const OPS = ['canCommit', 'preCommit', 'doCommit', 'abort']

function checkMessage(message: ThreePhaseMessage): ThreePhaseMessage {
  if (typeof message !== 'object' || message === null) {
    throw new TypeError('latchkey-tx: a 3PC message is { gid, branch, op, input }')
  }
  checkId('gid', message.gid)
  checkId('branch', message.branch)
  if (!OPS.includes(message.op)) {
    throw new RangeError(`latchkey-tx: a 3PC op is one of ${OPS.join(', ')}, received ${JSON.stringify(message.op)}`)
  }
  return message
}

/**
 * The participant side of three-phase commit: runs the participant's state machine with its timeouts, keeping
 * the state durably in its own database (table `latchkey_tx_3pc`), in the same local transaction as the
 * business writes of preCommit / doCommit / abort, so it survives the participant's own restart (`start()` acts
 * on deadlines that passed while it was down). Repeated and out-of-order messages are answered from the
 * stored state: an abort before canCommit is remembered and the late canCommit votes no.
 *
 * @example
 * const p = threePhaseParticipant({
 *   db: pool, timeoutMs: 5_000,
 *   preCommit: (trx, { input }) => trx.query('UPDATE acct SET held = held + $1 WHERE id = 1', [input.amount]),
 *   doCommit: (trx, { input }) => trx.query('UPDATE acct SET bal = bal - $1, held = held - $1 WHERE id = 1', [input.amount]),
 *   abort: (trx, { input }) => trx.query('UPDATE acct SET held = held - $1 WHERE id = 1', [input.amount]),
 * })
 * await p.start()
 * tc.threePhase('pay', { wallet: p.branch(), bank: threePhaseHttp('http://bank/3pc') })
 */
export function threePhaseParticipant<I = unknown>(
  options: ThreePhaseParticipantOptions<I>,
): ThreePhaseParticipantHandle<I> {
  return new Participant<I>(options)
}
