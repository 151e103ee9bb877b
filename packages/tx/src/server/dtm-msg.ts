/**
 * DTM's two-phase message on the coordinator. The producer (a DTM SDK's `DoAndSubmit`) calls `prepare` with the
 * message's steps and its `query_prepared` URL, commits its local transaction (with DTM's barrier row), then calls
 * `submit`; on a business failure it calls `abort`. Once submitted, the coordinator calls every step's action
 * until it succeeds: a message has no compensation, its steps must eventually succeed.
 *
 * When the submit never comes (the producer died between its commit and the submit), the coordinator asks
 * `query_prepared` once `timeout_to_fail` has passed since the prepare. With DTM's barrier on the producer's side
 * that answer is definitive: the check-back inserts the barrier row the local transaction would insert, so it
 * either finds the transaction committed or keeps it from ever committing. The submit and the check-back's
 * verdict are both decisions (dtm-decision.ts): a late submit cannot deliver a message the check-back rolled back.
 *
 * The coordinator resumes a transaction from a definition registered under its name, so each message *shape*
 * (its number of steps) is one definition, `dtm-msg-<n>`, whose steps read their URLs and payloads from the
 * stored input, as DTM sagas do.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { DEFAULT_BARRIER_TABLE } from '../barrier/barrier-sql.js'
import type { Coordinator } from '../coordinator/coordinator.js'
import { internalsOf } from '../coordinator/coordinator-internals.js'
import type { TxDefinition } from '../coordinator/definition.js'
import { StopDriving } from '../coordinator/drive-errors.js'
import type { RunResult } from '../coordinator/run-result.js'
import type { TxRun } from '../coordinator/tx-run.js'
import { checkBackOf } from '../msg/check-back.js'
import type { LocalOutcome } from '../msg/query-prepared.js'
import { callDtmBranch } from './dtm-branch-call.js'
import type { Decision, DtmDecisions } from './dtm-decision.js'
import type { DtmTrans } from './dtm-request.js'
import { branchId, DEFAULT_REQUEST_TIMEOUT_S } from './dtm-saga.js'

/** The stored input of a DTM message: the prepare (or submit) body and the epoch ms it is checked back at. */
export type DtmMsgInput = DtmTrans & { readonly checkBackAt: number }

/** Prefix of the definitions' names. */
export const DTM_MSG_PREFIX = 'dtm-msg-'

/** The pseudo-branch that records the check-back calls (DTM's branch id `00`, op `msg`). */
const CHECK_BACK = '00'

/** The definition name of a message's shape. */
export const msgName = (trans: DtmTrans) => `${DTM_MSG_PREFIX}${trans.steps.length}`

/** The messages of one coordinator, by shape: registered on first use (or when a stored one is resumed). */
export class DtmMsgs {
  private readonly byName = new Map<string, TxDefinition>()

  constructor(
    private readonly tc: Coordinator,
    private readonly decisions: DtmDecisions,
    private readonly pollMs: number,
  ) {}

  /** Whether the shape named `name` is registered here. */
  has(name: string): boolean {
    return this.byName.has(name)
  }

  /**
   * Logs a message (durable when this resolves), prepared: it is delivered once decided `submit`, and checked back
   * `timeoutS` from now if still undecided.
   */
  start(trans: DtmTrans, timeoutS: number): Promise<RunResult> {
    const input: DtmMsgInput = { ...trans, checkBackAt: Date.now() + timeoutS * 1000 }
    return internalsOf(this.tc).start(this.for(trans), input, { gid: trans.gid, wait: false }, false)
  }

  /** Decides `decision` for `gid` (unless decided already); resolves with the decision that holds. */
  decide(gid: string, decision: Decision, reason: string): Promise<Decision> {
    return this.decisions.decide(gid, decision, reason)
  }

  /** The definition for `trans`'s shape, registered if new. */
  for(trans: DtmTrans): TxDefinition {
    const name = msgName(trans)
    const known = this.byName.get(name)
    if (known !== undefined) return known
    const ids = trans.steps.map((_, i) => branchId(i))
    const def: TxDefinition = {
      kind: 'msg',
      name,
      branches: () => [
        { id: CHECK_BACK, op: 'check-back' as const, seq: 0 },
        ...ids.map((id, i) => ({ id, op: 'action' as const, seq: i + 1 })),
      ],
      knows: (stored) => stored.every((id) => id === CHECK_BACK || ids.includes(id)),
      drive: (run) => this.drive(run, ids),
    }
    internalsOf(this.tc).register(def)
    this.byName.set(name, def)
    return def
  }

  private async drive(run: TxRun, ids: readonly string[]): Promise<void> {
    const input = run.record.input as DtmMsgInput
    if (run.status === 'prepared') {
      const decision = await this.awaitDecision(run, input)
      if (decision === 'abort') {
        const error = 'the producer aborted, or query_prepared answered that its local transaction rolled back'
        await run.transition('failed', { error }, error)
        return
      }
      await run.transition('submitted', {}, 'submitted')
    }
    if (run.status === 'submitted') {
      for (const [i, id] of ids.entries()) {
        if (run.branch(id, 'action').status === 'succeeded') continue
        await run.call(
          id,
          'action',
          (ctx) =>
            callDtmBranch({
              url: input.steps[i]?.action ?? '',
              gid: input.gid,
              transType: 'msg',
              branchId: id,
              op: 'action',
              payload: input.payloads?.[i],
              headers: input.branch_headers,
              timeoutMs: (input.request_timeout || DEFAULT_REQUEST_TIMEOUT_S) * 1000,
              signal: ctx.signal,
            }),
          false,
        )
      }
      await run.transition('succeeded')
      return
    }
    // `tc.abort` of a message parked while delivering: a human gave up on the steps not delivered yet.
    if (run.status === 'aborting') await run.transition('failed', {}, 'delivery given up by tc.abort()')
  }

  /** Waits for the submit or abort; past `checkBackAt`, asks `query_prepared` and decides on its answer. */
  private async awaitDecision(run: TxRun, input: DtmMsgInput): Promise<Decision> {
    for (;;) {
      const decided = await this.decisions.get(input.gid)
      if (decided !== undefined) return decided
      if (Date.now() >= input.checkBackAt) {
        const ask = checkBackOf(input.query_prepared, `msg ${input.gid} query_prepared`, DEFAULT_BARRIER_TABLE)
        const outcome = await run.call(CHECK_BACK, 'check-back', (ctx) => ask(ctx.gid, ctx.signal), false)
        const verdict: LocalOutcome = outcome.ok ? (outcome.result as LocalOutcome) : 'rolled-back'
        const decision = verdict === 'committed' ? 'submit' : 'abort'
        return this.decisions.decide(input.gid, decision, `query_prepared answered ${verdict}`)
      }
      try {
        await sleep(Math.min(this.pollMs, Math.max(1, input.checkBackAt - Date.now())), undefined, {
          signal: run.signal,
        })
      } catch {
        throw new StopDriving('lease lost or coordinator closing')
      }
    }
  }
}
