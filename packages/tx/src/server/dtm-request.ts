/**
 * The JSON bodies of DTM's HTTP API (field names as in DTM's `dtmcli` types), parsed and checked. A bad body is
 * a {@link DtmBadRequest} naming the field, which the server answers with 400.
 */
import { checkId } from '../branch.js'

/** A saga step as DTM sends it: the forward URL and the compensation URL (either may be empty: no call). */
export interface DtmStep {
  readonly action: string
  readonly compensate: string
}

/** The transaction types this service runs (DTM's `workflow` is refused with a clear 400). */
export type DtmTransType = 'saga' | 'tcc' | 'msg' | 'xa'

/** What the service keeps of a submitted (saga) or prepared (TCC, message) transaction: stored as its input. */
export interface DtmTrans {
  readonly gid: string
  readonly trans_type: DtmTransType
  readonly steps: readonly DtmStep[]
  /** The body of each step's calls (DTM sends it to both the action and the compensation). */
  readonly payloads: readonly string[] | null
  readonly custom_data: string
  readonly timeout_to_fail: number
  readonly request_timeout: number
  readonly retry_interval: number
  readonly wait_result: boolean
  readonly branch_headers: Readonly<Record<string, string>>
  /** A message's check-back URL (DTM's `QueryPrepared`), asked when no submit came in time; '' for the others. */
  readonly query_prepared: string
}

/**
 * A branch registration (`registerBranch`): a TCC branch's confirm and cancel URLs, or an XA branch's one phase-2
 * URL (kept as both: the service calls it with `op=commit` or `op=rollback`).
 */
export interface DtmRegistration {
  readonly branch_id: string
  readonly confirm: string
  readonly cancel: string
  readonly data: string
}

/** A request body that does not follow DTM's API: answered with 400 and this message. */
export class DtmBadRequest extends Error {
  override name = 'DtmBadRequest'
}

type Json = Record<string, unknown>

function object(body: unknown): Json {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DtmBadRequest(`the body must be a JSON object, received ${JSON.stringify(body)}`)
  }
  return body as Json
}

function url(field: string, value: unknown): string {
  if (value === undefined || value === null || value === '') return ''
  if (typeof value !== 'string' || !/^https?:\/\//.test(value)) {
    throw new DtmBadRequest(`${field} must be an http:// or https:// URL (or empty), received ${JSON.stringify(value)}`)
  }
  return value
}

function seconds(field: string, value: unknown): number {
  if (value === undefined || value === null) return 0
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 86_400 * 30) {
    throw new DtmBadRequest(`${field} must be a whole number of seconds from 0, received ${JSON.stringify(value)}`)
  }
  return value
}

/** The gid of any body: DTM gids used here must also be valid latchkey-tx ids. */
export function parseGid(value: unknown): string {
  try {
    return checkId('gid', value)
  } catch (error) {
    throw new DtmBadRequest((error as Error).message.replace('latchkey-tx: ', ''))
  }
}

/** `trans_type`, checked against what this service runs (workflow is refused clearly). */
export function parseTransType(value: unknown): DtmTransType {
  if (value === 'saga' || value === 'tcc' || value === 'msg' || value === 'xa') return value
  if (value === 'workflow') {
    throw new DtmBadRequest(
      'trans_type "workflow" is not supported yet by latchkey-tx serve (saga, tcc, msg and xa are)',
    )
  }
  throw new DtmBadRequest(`trans_type must be saga, tcc, msg or xa, received ${JSON.stringify(value)}`)
}

/** The body of `submit` (saga) or `prepare` (tcc). */
export function parseTrans(body: unknown): DtmTrans {
  const b = object(body)
  const gid = parseGid(b.gid)
  const trans_type = parseTransType(b.trans_type)
  const rawSteps = b.steps ?? []
  if (!Array.isArray(rawSteps)) throw new DtmBadRequest(`steps must be an array, received ${JSON.stringify(rawSteps)}`)
  const steps = rawSteps.map((s: unknown, i) => {
    const step = object(s)
    return {
      action: url(`steps[${i}].action`, step.action),
      compensate: url(`steps[${i}].compensate`, step.compensate),
    }
  })
  if ((trans_type === 'saga' || trans_type === 'msg') && steps.length === 0) {
    throw new DtmBadRequest(`a ${trans_type} needs at least one step in steps`)
  }
  let payloads: string[] | null = null
  // DTM's first SDKs (and its Python client) put each step's body in the step as `data`, without payloads.
  const stepData = rawSteps.map((s: Json) => s.data)
  if (
    (b.payloads === undefined || b.payloads === null) &&
    stepData.length > 0 &&
    stepData.every((d) => typeof d === 'string')
  ) {
    payloads = stepData as string[]
  } else if (b.payloads !== undefined && b.payloads !== null) {
    if (!Array.isArray(b.payloads) || b.payloads.some((p) => typeof p !== 'string')) {
      throw new DtmBadRequest('payloads must be an array of strings (one JSON body per step)')
    }
    if (b.payloads.length !== steps.length) {
      throw new DtmBadRequest(`payloads has ${b.payloads.length} entries for ${steps.length} steps`)
    }
    payloads = b.payloads as string[]
  }
  const custom = b.custom_data ?? ''
  if (typeof custom !== 'string') throw new DtmBadRequest('custom_data must be a string (of JSON)')
  const headers = b.branch_headers ?? {}
  if (typeof headers !== 'object' || headers === null || Object.values(headers).some((v) => typeof v !== 'string')) {
    throw new DtmBadRequest('branch_headers must be an object of string values')
  }
  return {
    gid,
    trans_type,
    steps,
    payloads,
    custom_data: custom,
    timeout_to_fail: seconds('timeout_to_fail', b.timeout_to_fail),
    request_timeout: seconds('request_timeout', b.request_timeout),
    retry_interval: seconds('retry_interval', b.retry_interval),
    wait_result: b.wait_result === true,
    branch_headers: headers as Record<string, string>,
    query_prepared: url('query_prepared', b.query_prepared),
  }
}

/** The body of `registerBranch` for a TCC branch (confirm, cancel) or an XA branch (url). */
export function parseRegistration(body: unknown): {
  gid: string
  transType: 'tcc' | 'xa'
  registration: DtmRegistration
} {
  const b = object(body)
  const gid = parseGid(b.gid)
  const transType = parseTransType(b.trans_type ?? 'tcc')
  if (transType !== 'tcc' && transType !== 'xa') {
    throw new DtmBadRequest(`registerBranch is for tcc and xa transactions, received trans_type ${transType}`)
  }
  if (typeof b.branch_id !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(b.branch_id)) {
    throw new DtmBadRequest(`branch_id must be 1 to 64 of A-Z a-z 0-9 _ . -, received ${JSON.stringify(b.branch_id)}`)
  }
  const data = b.data ?? ''
  if (typeof data !== 'string') throw new DtmBadRequest('data must be a string (the JSON body of the phase-2 calls)')
  if (transType === 'xa') {
    const phase2 = url('url', b.url)
    if (phase2 === '')
      throw new DtmBadRequest('an xa branch needs url (its phase-2 URL, called with op=commit or op=rollback)')
    return { gid, transType, registration: { branch_id: b.branch_id, confirm: phase2, cancel: phase2, data } }
  }
  return {
    gid,
    transType,
    registration: { branch_id: b.branch_id, confirm: url('confirm', b.confirm), cancel: url('cancel', b.cancel), data },
  }
}
