/**
 * Calls a participant the way DTM's server does, so a participant written for DTM (and DTM's barrier, which
 * reads these query parameters) works unchanged: `gid`, `trans_type`, `branch_id` and `op` as query
 * parameters; the branch's payload as the body of a POST (a GET when there is none); DTM's result protocol on
 * the answer. This differs from `http()` branches (`latchkey-tx/http`), which POST `{ gid, branch, op, input }`.
 */
import { TxError } from '../errors.js'
import { exchange } from '../http/exchange.js'
import type { DtmTransType } from './dtm-request.js'

/** One call of a participant. */
export interface DtmBranchCall {
  readonly url: string
  readonly gid: string
  readonly transType: DtmTransType
  readonly branchId: string
  readonly op: string
  /** The request body; undefined sends a GET, as DTM does for a branch without payload. */
  readonly payload: string | undefined
  readonly headers: Readonly<Record<string, string>>
  readonly timeoutMs: number
  readonly signal: AbortSignal
}

/**
 * Resolves with the answer's JSON (or text) on success; an empty URL is success without a call (as in DTM).
 * 409 or a body containing `FAILURE` rejects with a non-retryable `TxError` (a forward step fails; the
 * coordinator retries compensations and confirms anyway); 425 or `ONGOING` and anything else (5xx, timeout,
 * refused) reject with a retryable one.
 */
export async function callDtmBranch(call: DtmBranchCall): Promise<unknown> {
  if (call.url === '') return null
  const target = new URL(call.url)
  target.searchParams.set('gid', call.gid)
  target.searchParams.set('trans_type', call.transType)
  target.searchParams.set('branch_id', call.branchId)
  target.searchParams.set('op', call.op)
  const method = call.payload === undefined ? 'GET' : 'POST'
  const what = `${call.op} of branch ${call.branchId}: ${method} ${call.url}`
  const got = await exchange(
    target,
    {
      method,
      headers: { 'content-type': 'application/json', ...call.headers },
      ...(call.payload === undefined ? {} : { body: call.payload }),
    },
    call.signal,
    call.timeoutMs,
  )
  if (got.failed !== undefined) {
    throw new TxError(`${what} ${got.failed}; will retry`, {
      code: 'BRANCH_UNREACHABLE',
      retryable: true,
      gid: call.gid,
      cause: got.error,
    })
  }
  const { status, text } = got
  const detail = `${what} answered ${status}${text ? ` (${text.slice(0, 200)})` : ''}`
  // DTM's rule (RespAsErrorCompatible): the status code or the words in the body.
  if (status === 425 || text.includes('ONGOING')) {
    throw new TxError(`${detail}; still ongoing`, { code: 'BRANCH_ONGOING', retryable: true, gid: call.gid })
  }
  if (status === 409 || text.includes('FAILURE')) {
    throw new TxError(detail, { code: 'BRANCH_FAILED', gid: call.gid })
  }
  if (status < 200 || status >= 300) {
    throw new TxError(`${detail}; will retry`, { code: 'BRANCH_UNAVAILABLE', retryable: true, gid: call.gid })
  }
  if (text === '') return null
  try {
    return JSON.parse(text)
  } catch {
    return text.slice(0, 1000)
  }
}
