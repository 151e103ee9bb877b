/**
 * DTM's TCC on the coordinator. In DTM the application (not the server) calls every try, registering each
 * branch's confirm and cancel URLs first, then submits or aborts. The coordinator's TCC driver tries, then
 * confirms or cancels, over branches fixed when the transaction starts; so a DTM TCC is one coordinator TCC
 * (`dtm-tcc`) with one participant, `branches`:
 * - its **try** waits for the application's decision, and past `timeout_to_fail` decides to abort itself;
 * - its **confirm** / **cancel** call every registered branch's confirm / cancel URL, last registered first.
 * Registrations and the decision are durable before the server answers: each is a small record of its own in
 * the same log (`<gid>/r/<n>`, one-step no-op sagas, and the decision of dtm-decision.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Coordinator } from '../coordinator/coordinator.js'
import { isTxError, TxError } from '../errors.js'
import type { Saga } from '../saga/saga.js'
import type { Tcc } from '../tcc/tcc.js'
import { callDtmBranch } from './dtm-branch-call.js'
import { type Decision, DTM_DECISION, type DtmDecisions } from './dtm-decision.js'
import type { DtmRegistration, DtmTrans } from './dtm-request.js'
import { DEFAULT_REQUEST_TIMEOUT_S } from './dtm-saga.js'

/** Names of the definitions; the two helper records are hidden from listings. */
export const DTM_TCC = 'dtm-tcc'
export const DTM_XA = 'dtm-xa'
export const DTM_TCC_BRANCH = 'dtm-tcc-branch'

/** The definition of a DTM TCC or XA transaction, by trans_type. */
export const REGISTERED_BRANCH_NAMES = { tcc: DTM_TCC, xa: DTM_XA } as const

/** Whether a stored transaction is a DTM TCC or XA (one whose branches the application registers). */
export const hasRegisteredBranches = (name: string) => name === DTM_TCC || name === DTM_XA

/** DTM's names of the two phase-2 operations: a TCC confirms or cancels, an XA branch commits or rolls back. */
const PHASE2_OPS = {
  tcc: { confirm: 'confirm', cancel: 'cancel' },
  xa: { confirm: 'commit', cancel: 'rollback' },
} as const
export const HELPER_NAMES: readonly string[] = [DTM_TCC_BRANCH, DTM_DECISION]

/** The stored input of a DTM TCC: the prepare body and the epoch ms past which it aborts by itself. */
export type DtmTccInput = DtmTrans & { readonly deadlineAt: number }

const registrationGid = (gid: string, n: number) => `${gid}/r/${n}`
const noop = { action: () => null }

/** The TCC half of the DTM service. */
export class DtmTccs {
  readonly tcc: Tcc<DtmTccInput>
  /**
   * DTM's XA over HTTP has the same shape: each branch runs `XA START … XA PREPARE` in the application's own
   * service and registers its phase-2 URL; the service then calls it with `op=commit` (submit) or `op=rollback`
   * (abort, timeout_to_fail).
   */
  readonly xa: Tcc<DtmTccInput>
  private readonly registrations: Saga<DtmRegistration>
  /** Registrations of one gid are numbered one after the other: serialized in this process. */
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(
    private readonly tc: Coordinator,
    private readonly decisions: DtmDecisions,
    private readonly pollMs: number,
  ) {
    this.registrations = tc.saga<DtmRegistration>(DTM_TCC_BRANCH).step('record', noop)
    const branches = {
      try: ({ input, signal }: { input: DtmTccInput; signal: AbortSignal }) => this.awaitDecision(input, signal),
      confirm: ({ input, signal }: { input: DtmTccInput; signal: AbortSignal }) =>
        this.callAll(input, 'confirm', signal),
      cancel: ({ input, signal }: { input: DtmTccInput; signal: AbortSignal }) => this.callAll(input, 'cancel', signal),
    }
    this.tcc = tc.tcc<DtmTccInput>(DTM_TCC, { branches })
    this.xa = tc.tcc<DtmTccInput>(DTM_XA, { branches })
  }

  /** The registered branches of `gid`, in registration order. */
  async registered(gid: string): Promise<DtmRegistration[]> {
    const out: DtmRegistration[] = []
    for (let n = 1; ; n++) {
      const record = await this.tc.get(registrationGid(gid, n))
      if (record === undefined) return out
      out.push(record.input as DtmRegistration)
    }
  }

  /** The decision written for `gid`, if any. */
  decision(gid: string): Promise<Decision | undefined> {
    return this.decisions.get(gid)
  }

  /** Writes the decision unless one exists; resolves with the decision that holds. */
  decide(gid: string, decision: Decision, reason: string): Promise<Decision> {
    return this.decisions.decide(gid, decision, reason)
  }

  /** Registers a branch (idempotent per branch_id). */
  register(gid: string, registration: DtmRegistration): Promise<void> {
    const previous = this.queues.get(gid) ?? Promise.resolve()
    const next = previous.catch(() => undefined).then(() => this.registerOnce(gid, registration))
    this.queues.set(gid, next)
    return next.finally(() => {
      if (this.queues.get(gid) === next) this.queues.delete(gid)
    })
  }

  private async registerOnce(gid: string, registration: DtmRegistration): Promise<void> {
    // Another server on the same store may take the same number at once: its record wins; count again.
    for (let attempt = 1; ; attempt++) {
      const known = await this.registered(gid)
      if (known.some((r) => r.branch_id === registration.branch_id)) return
      try {
        await this.registrations.run(registration, { gid: registrationGid(gid, known.length + 1) })
        return
      } catch (error) {
        const taken = isTxError(error) && (error.code === 'DUPLICATE_GID' || error.code === 'TX_BUSY')
        if (!taken || attempt >= 5) throw error
      }
    }
  }

  private async awaitDecision(input: DtmTccInput, signal: AbortSignal): Promise<unknown> {
    for (;;) {
      let decision = await this.decision(input.gid)
      if (decision === undefined && Date.now() >= input.deadlineAt) {
        decision = await this.decide(input.gid, 'abort', `timeout after ${input.timeout_to_fail} s without submit`)
      }
      if (decision === 'submit') return { decision }
      if (decision === 'abort') {
        throw new TxError(`Transaction ${input.gid} aborted: no submit (abort called or timeout_to_fail passed)`, {
          code: 'DTM_ABORTED',
          gid: input.gid,
        })
      }
      try {
        await sleep(this.pollMs, undefined, { signal })
      } catch {
        throw new TxError('stopped waiting for the decision', { code: 'CLOSED', retryable: true })
      }
    }
  }

  /** Confirms (cancels) every registered branch, the last registered first, as DTM does. */
  private async callAll(input: DtmTccInput, op: 'confirm' | 'cancel', signal: AbortSignal): Promise<unknown> {
    const branches = await this.registered(input.gid)
    const transType = input.trans_type === 'xa' ? 'xa' : 'tcc'
    for (const r of [...branches].reverse()) {
      await callDtmBranch({
        url: r[op],
        gid: input.gid,
        transType,
        branchId: r.branch_id,
        op: PHASE2_OPS[transType][op],
        payload: r.data,
        headers: input.branch_headers,
        timeoutMs: (input.request_timeout || DEFAULT_REQUEST_TIMEOUT_S) * 1000,
        signal,
      })
    }
    return { [op]: branches.length }
  }
}
