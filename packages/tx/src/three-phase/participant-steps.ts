/**
 * The participant's state machine: what each coordinator message, and each passed deadline, does to the stored
 * state and the business data, inside one local transaction that holds the state row's lock.
 */
import { TxError } from '../errors.js'
import type { ParticipantSql, StateRow } from './participant-sql.js'
import type {
  ParticipantAnswer,
  ParticipantEvent,
  ThreePhaseContext,
  ThreePhaseParticipantOptions,
} from './participant-types.js'

/** What a message did: the answer, a refusal to send once the local transaction committed, the event to report. */
export type Step = { answer: ParticipantAnswer; refused?: string; event?: ParticipantEvent }

const answer = (row: Pick<StateRow, 'state' | 'decidedBy'>): ParticipantAnswer => ({
  state: row.state,
  decidedBy: row.decidedBy,
})

/** The transitions, given the participant's business functions and its timeout. */
export class ParticipantSteps<I> {
  constructor(
    private readonly o: ThreePhaseParticipantOptions<I>,
    private readonly timeoutMs: number,
  ) {}

  async canCommit(
    trx: unknown,
    sql: ParticipantSql,
    row: StateRow | undefined,
    ctx: ThreePhaseContext<I>,
  ): Promise<Step> {
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

  async preCommit(
    trx: unknown,
    sql: ParticipantSql,
    row: StateRow | undefined,
    ctx: ThreePhaseContext<I>,
  ): Promise<Step> {
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

  async doCommit(
    trx: unknown,
    sql: ParticipantSql,
    row: StateRow | undefined,
    ctx: ThreePhaseContext<I>,
  ): Promise<Step> {
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

  async abort(trx: unknown, sql: ParticipantSql, row: StateRow | undefined, ctx: ThreePhaseContext<I>): Promise<Step> {
    if (row?.state === 'committed' || row?.state === 'aborted') return { answer: answer(row) }
    if (row?.state === 'precommitted') await this.o.abort?.(trx, ctx)
    const change = { state: 'aborted' as const, decidedBy: 'coordinator' as const, deadlineAt: null }
    if (row === undefined) await sql.insert({ ...ctx, ...change })
    else await sql.update(ctx.gid, ctx.branch, change)
    return { answer: answer(change), event: { type: 'aborted', gid: ctx.gid, branch: ctx.branch, by: 'coordinator' } }
  }

  /** Acts on a passed deadline; `row` was read under its lock (a message may have moved it since the scan). */
  async actAlone(trx: unknown, sql: ParticipantSql, row: StateRow | undefined): Promise<ParticipantEvent | undefined> {
    if (row === undefined || row.deadlineAt === null || row.deadlineAt > Date.now()) return undefined
    const { gid, branch } = row
    if (row.state === 'voted') {
      // No preCommit in time: it cannot know that everyone voted yes, so it aborts. (Had another participant got
      // preCommit, that one commits on its own: the split that is 3PC's known limit.)
      await sql.update(gid, branch, { state: 'aborted', decidedBy: 'timeout', deadlineAt: null })
      return { type: 'aborted', gid, branch, by: 'timeout' }
    }
    if (row.state !== 'precommitted') return undefined
    // Pre-committed and the coordinator went silent: preCommit is only sent once every participant voted yes,
    // so 3PC commits — the step that 2PC cannot take.
    await this.o.doCommit(trx, { gid, branch, input: row.input as I, by: 'timeout' })
    await sql.update(gid, branch, { state: 'committed', decidedBy: 'timeout', deadlineAt: null })
    return { type: 'committed', gid, branch, by: 'timeout' }
  }
}
