import { checkId } from '../branch.js'
import { type InTransaction, transactionRunner } from '../fastify/local-tx.js'
import { checkParticipantOptions } from './participant-options.js'
import { type ParticipantSql, participantSql, type StateRow } from './participant-sql.js'
import { ParticipantSteps } from './participant-steps.js'
import {
  type ParticipantAnswer,
  type ParticipantEvent,
  type ThreePhaseMessage,
  type ThreePhaseParticipantHandle,
  type ThreePhaseParticipantOptions,
  ThreePhaseRefusal,
} from './participant-types.js'
import type { ThreePhaseParticipant } from './three-phase.js'

/** A participant: the durable state machine, its deadline checks, its ways in (in process, `handle`). */
class Participant<I> implements ThreePhaseParticipantHandle<I> {
  private readonly inTx: InTransaction
  private readonly steps: ParticipantSteps<I>
  private readonly checkEveryMs: number
  private readonly table: string
  private timer: NodeJS.Timeout | undefined
  private checking: Promise<unknown> | undefined
  private stopped = false

  constructor(private readonly o: ThreePhaseParticipantOptions<I>) {
    const checked = checkParticipantOptions(o)
    this.steps = new ParticipantSteps(o, checked.timeoutMs)
    this.checkEveryMs = checked.checkEveryMs
    this.table = checked.table
    try {
      this.inTx = transactionRunner(o.db, o.isolation)
    } catch (error) {
      throw new TypeError(
        `latchkey-tx: threePhaseParticipant ${error instanceof Error ? error.message.replace(/^latchkey-tx\/fastify: /, '') : String(error)}`,
      )
    }
  }

  private sql(trx: unknown): ParticipantSql {
    return participantSql(trx, this.table)
  }

  async start(): Promise<void> {
    await this.inTx((trx) => this.sql(trx).createTable())
    if (this.timer !== undefined && !this.stopped) return
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
          return this.steps.canCommit(trx, sql, row, ctx)
        case 'preCommit':
          return this.steps.preCommit(trx, sql, row, ctx)
        case 'doCommit':
          return this.steps.doCommit(trx, sql, row, ctx)
        default:
          return this.steps.abort(trx, sql, row, ctx)
      }
    })
    if (step.event !== undefined) this.emit(step.event)
    if (step.refused !== undefined) throw new ThreePhaseRefusal(step.refused, m.gid)
    return step.answer
  }

  async checkTimeouts(): Promise<number> {
    const now = Date.now()
    const due = await this.inTx((trx) => this.sql(trx).due(now, 100))
    let moved = 0
    for (const { gid, branch } of due) {
      // One row whose doCommit fails (its database refused) must not hold back the others: report it, go on.
      const event = await this.inTx(async (trx) => {
        const sql = this.sql(trx)
        return this.steps.actAlone(trx, sql, await sql.lock(gid, branch))
      }).catch((error: unknown) => {
        this.emit({ type: 'error', gid, branch, error })
        return undefined
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
