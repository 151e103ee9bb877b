/**
 * DTM's HTTP API (`/api/dtmsvr/...`) as operations on a coordinator: each returns the HTTP status and JSON body
 * DTM would answer (2xx with `dtm_result` SUCCESS; 409 FAILURE; 425 ONGOING; 400 for a body DTM would refuse).
 * Whatever is accepted is in the coordinator's log before the answer is sent.
 */
import { randomBytes } from 'node:crypto'
import type { Coordinator } from '../coordinator/coordinator.js'
import { describe, isTxError } from '../errors.js'
import type { TxRecord } from '../types.js'
import { DtmDecisions } from './dtm-decision.js'
import { DTM_MSG_PREFIX, DtmMsgs } from './dtm-msg.js'
import { DtmBadRequest, type DtmTrans, parseGid, parseRegistration, parseTrans, parseTransType } from './dtm-request.js'
import { DTM_SAGA_PREFIX, DtmSagas } from './dtm-saga.js'
import { DtmTccs, HELPER_NAMES, hasRegisteredBranches, REGISTERED_BRANCH_NAMES } from './dtm-tcc.js'
import { type DtmQuery, dtmTransaction } from './dtm-view.js'

/** An answer: HTTP status and JSON body. */
export interface DtmAnswer {
  readonly status: number
  readonly body: Record<string, unknown>
}

/** Options of {@link DtmService}. */
export interface DtmServiceOptions {
  /** TCC `timeout_to_fail` when the request gives none (DTM's default: 35 s). */
  readonly defaultTimeoutToFailS?: number
  /** How often a TCC's try phase looks for the decision. Default 50. */
  readonly pollMs?: number
  /** Longest wait of a `wait_result` submit before it answers ONGOING. Default 10 000. */
  readonly waitResultMs?: number
}

const ok = (extra: Record<string, unknown> = {}): DtmAnswer => ({
  status: 200,
  body: { dtm_result: 'SUCCESS', ...extra },
})
const failure = (message: string, status = 409): DtmAnswer => ({ status, body: { dtm_result: 'FAILURE', message } })
const ongoing = (message: string): DtmAnswer => ({ status: 425, body: { dtm_result: 'ONGOING', message } })

/** The DTM-compatible service over one coordinator. */
export class DtmService {
  readonly sagas: DtmSagas
  readonly tccs: DtmTccs
  readonly msgs: DtmMsgs
  private readonly defaultTimeoutS: number
  private readonly waitResultMs: number

  constructor(
    private readonly tc: Coordinator,
    options: DtmServiceOptions = {},
  ) {
    this.sagas = new DtmSagas(tc)
    const decisions = new DtmDecisions(tc)
    this.tccs = new DtmTccs(tc, decisions, options.pollMs ?? 50)
    this.msgs = new DtmMsgs(tc, decisions, options.pollMs ?? 50)
    this.defaultTimeoutS = options.defaultTimeoutToFailS ?? 35
    this.waitResultMs = options.waitResultMs ?? 10_000
  }

  /**
   * Registers the definition of every unfinished DTM saga and message in the log that this coordinator does not
   * know yet (a shape is known from its stored input only), so that its recovery sweep can resume them: at start,
   * after a crash, and periodically, for sagas another server on the same store accepted and then died with.
   * Resolves with how many it registered.
   */
  async adopt(): Promise<number> {
    let n = 0
    for (const status of ['prepared', 'submitted', 'aborting', 'parked'] as const) {
      for (const kind of ['saga', 'msg'] as const) {
        for (const tx of await this.tc.list({ status, kind, limit: 10_000 })) {
          const shapes = kind === 'saga' ? this.sagas : this.msgs
          const prefix = kind === 'saga' ? DTM_SAGA_PREFIX : DTM_MSG_PREFIX
          if (!tx.name.startsWith(prefix) || shapes.has(tx.name)) continue
          const record = await this.tc.get(tx.gid)
          if (record === undefined) continue
          shapes.for(record.input as DtmTrans)
          n++
        }
      }
    }
    return n
  }

  /** Runs one operation, turning bad requests and coordinator errors into DTM's answers. */
  async handle(op: string, body: unknown, query: URLSearchParams): Promise<DtmAnswer> {
    try {
      switch (op) {
        case 'newGid':
          return ok({ gid: randomBytes(12).toString('base64url') })
        case 'submit':
          return await this.submit(body)
        case 'prepare':
          return await this.prepare(body)
        case 'abort':
          return await this.abort(body)
        case 'registerBranch':
        case 'registerTccBranch':
          return await this.registerBranch(body)
        case 'query':
          return await this.query(query.get('gid'))
        case 'all':
          return await this.all(query.get('last_id'))
        default:
          return failure(`no such operation: ${op}`, 404)
      }
    } catch (error) {
      if (error instanceof DtmBadRequest) return failure(error.message, 400)
      if (error instanceof RangeError || error instanceof TypeError) return failure(error.message, 400)
      if (isTxError(error) && error.retryable) return ongoing(describe(error))
      return failure(describe(error), 500)
    }
  }

  private async submit(body: unknown): Promise<DtmAnswer> {
    const trans = parseTrans(body)
    if (trans.trans_type === 'tcc' || trans.trans_type === 'xa') {
      return this.decideTcc(trans.gid, 'submit', trans.wait_result)
    }
    if (trans.trans_type === 'msg') return this.submitMsg(trans)
    const existing = await this.tc.get(trans.gid)
    if (existing !== undefined) return this.resubmitted(existing, 'saga')
    try {
      const deadlineAt = trans.timeout_to_fail > 0 ? Date.now() + trans.timeout_to_fail * 1000 : null
      await this.sagas.for(trans).run({ ...trans, deadlineAt }, { gid: trans.gid, wait: false })
    } catch (error) {
      // Two submits of one gid at once: the second finds the first's record (DTM answers a repeat with SUCCESS).
      const again = await this.tc.get(trans.gid)
      if (again === undefined) throw error
      return this.resubmitted(again, 'saga')
    }
    return trans.wait_result ? this.waitResult(trans.gid) : ok()
  }

  private resubmitted(record: TxRecord, kind: 'saga' | 'tcc'): DtmAnswer {
    if (record.kind !== kind || (kind === 'saga' && !record.name.startsWith(DTM_SAGA_PREFIX))) {
      return failure(`gid ${record.gid} is already used by a ${record.kind} "${record.name}"`)
    }
    return ok()
  }

  private async prepare(body: unknown): Promise<DtmAnswer> {
    const trans = parseTrans(body)
    if (trans.trans_type === 'msg') return this.prepareMsg(trans)
    if (trans.trans_type === 'saga') return failure('prepare is for tcc, xa and msg transactions', 400)
    // A DTM TCC and a DTM XA are both a try phase waiting for the application's decision over branches it
    // registers (dtm-tcc.ts); they differ in the names of the phase-2 calls.
    const name = REGISTERED_BRANCH_NAMES[trans.trans_type]
    const existing = await this.tc.get(trans.gid)
    if (existing !== undefined) {
      if (existing.name !== name) return this.usedBy(existing)
      return existing.status === 'prepared' ? ok() : failure(`current status '${existing.status}', cannot prepare`)
    }
    const timeoutS = trans.timeout_to_fail || this.defaultTimeoutS
    const definition = trans.trans_type === 'xa' ? this.tccs.xa : this.tccs.tcc
    try {
      await definition.run({ ...trans, deadlineAt: Date.now() + timeoutS * 1000 }, { gid: trans.gid, wait: false })
    } catch (error) {
      // Two prepares of one gid at once: the second finds the first's record.
      const again = await this.tc.get(trans.gid)
      if (again?.name !== name || again.status !== 'prepared') throw error
    }
    return ok()
  }

  private async abort(body: unknown): Promise<DtmAnswer> {
    const b = (body ?? {}) as { gid?: unknown; trans_type?: unknown; wait_result?: unknown }
    const type = parseTransType(b.trans_type ?? 'tcc')
    if (type === 'msg') return this.decideMsg(parseGid(b.gid), 'abort', b.wait_result === true)
    return this.decideTcc(parseGid(b.gid), 'abort', b.wait_result === true)
  }

  private async prepareMsg(trans: DtmTrans): Promise<DtmAnswer> {
    if (trans.query_prepared === '') {
      throw new DtmBadRequest('a msg prepare needs query_prepared (the URL asked when no submit comes in time)')
    }
    const existing = await this.tc.get(trans.gid)
    if (existing !== undefined) {
      if (!existing.name.startsWith(DTM_MSG_PREFIX)) return this.usedBy(existing)
      return existing.status === 'prepared' ? ok() : failure(`current status '${existing.status}', cannot prepare`)
    }
    await this.startMsg(trans)
    return ok()
  }

  /** A message's submit: decides it (refused when an abort or the check-back decided first), then delivers. */
  private async submitMsg(trans: DtmTrans): Promise<DtmAnswer> {
    const existing = await this.tc.get(trans.gid)
    if (existing !== undefined && !existing.name.startsWith(DTM_MSG_PREFIX)) return this.usedBy(existing)
    const held = await this.msgs.decide(trans.gid, 'submit', 'submit called')
    if (held !== 'submit') return failure(`message ${trans.gid} has already decided to abort, cannot submit`)
    // DTM lets a message be submitted without a prepare (its SDK's msg.Submit()): logged now, delivered at once.
    if (existing === undefined) await this.startMsg(trans)
    return trans.wait_result ? this.waitResult(trans.gid) : ok()
  }

  private async startMsg(trans: DtmTrans): Promise<void> {
    try {
      await this.msgs.start(trans, trans.timeout_to_fail || this.defaultTimeoutS)
    } catch (error) {
      // Two prepares (or a prepare and a submit) of one gid at once: the second finds the first's record.
      const again = await this.tc.get(trans.gid)
      if (again === undefined || !again.name.startsWith(DTM_MSG_PREFIX)) throw error
    }
  }

  private async decideMsg(gid: string, decision: 'submit' | 'abort', wait: boolean): Promise<DtmAnswer> {
    const record = await this.tc.get(gid)
    if (record === undefined || !record.name.startsWith(DTM_MSG_PREFIX))
      return failure(`no msg transaction ${gid}`, 404)
    const held = await this.msgs.decide(gid, decision, `${decision} called`)
    if (held !== decision) return failure(`message ${gid} has already decided to ${held}, cannot ${decision}`)
    return wait ? this.waitResult(gid) : ok()
  }

  private usedBy(record: TxRecord): DtmAnswer {
    return failure(`gid ${record.gid} is already used by a ${record.kind} "${record.name}"`)
  }

  private async decideTcc(gid: string, decision: 'submit' | 'abort', wait: boolean): Promise<DtmAnswer> {
    const record = await this.tc.get(gid)
    if (record === undefined || !hasRegisteredBranches(record.name))
      return failure(`no tcc or xa transaction ${gid}`, 404)
    const held = await this.tccs.decide(gid, decision, `${decision} called`)
    if (held !== decision) return failure(`transaction ${gid} has already decided to ${held}, cannot ${decision}`)
    return wait ? this.waitResult(gid) : ok()
  }

  private async registerBranch(body: unknown): Promise<DtmAnswer> {
    const { gid, transType, registration } = parseRegistration(body)
    const record = await this.tc.get(gid)
    if (record === undefined || record.name !== REGISTERED_BRANCH_NAMES[transType]) {
      return failure(`no ${transType} transaction ${gid}`, 404)
    }
    if (record.status !== 'prepared' || (await this.tccs.decision(gid)) !== undefined) {
      return failure(`current status '${record.status}', cannot register a branch`)
    }
    await this.tccs.register(gid, registration)
    return ok()
  }

  private async waitResult(gid: string): Promise<DtmAnswer> {
    const deadline = Date.now() + this.waitResultMs
    for (;;) {
      const record = await this.tc.get(gid)
      if (record?.status === 'succeeded') return ok()
      if (record?.status === 'failed') return failure(record.error ?? 'failed')
      if (Date.now() > deadline) return ongoing(`transaction ${gid} is ${record?.status}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  private async query(gidParam: string | null): Promise<DtmAnswer> {
    const gid = parseGid(gidParam)
    const record = await this.tc.get(gid)
    if (record === undefined) return failure(`no transaction ${gid}`, 404)
    const view: DtmQuery = dtmTransaction(record, await this.registrationsOf(record))
    return ok({ ...view })
  }

  private async all(lastId: string | null): Promise<DtmAnswer> {
    const list = await this.tc.list({ limit: 1000 })
    const visible = list.filter((t) => !HELPER_NAMES.includes(t.name))
    const start = lastId === null ? 0 : visible.findIndex((t) => t.gid === lastId) + 1
    const page = visible.slice(start, start + 100)
    const transactions = []
    for (const t of page) {
      const record = await this.tc.get(t.gid)
      if (record !== undefined) transactions.push(dtmTransaction(record, []).transaction)
    }
    return ok({ transactions, next_position: page.length === 100 ? page.at(-1)?.gid : '' })
  }

  private registrationsOf(record: TxRecord) {
    return hasRegisteredBranches(record.name) ? this.tccs.registered(record.gid) : Promise.resolve([])
  }
}
