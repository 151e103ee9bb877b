/**
 * Calls a participant the way DTM's server does, so a participant written for DTM (and DTM's barrier, which
 * reads these query parameters) works unchanged: `gid`, `trans_type`, `branch_id` and `op` as query
 * parameters; the branch's payload as the body of a POST (a GET when there is none); DTM's result protocol on
 * the answer. This differs from `http()` branches (`latchkey-tx/http`), which POST `{ gid, branch, op, input }`.
 */
import { TxError } from '../errors.js'
import { withDeadline } from '../http/with-deadline.js'
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
  return withDeadline(call.signal, call.timeoutMs, (signal) => callWithin(call, signal))
}

async function callWithin(call: DtmBranchCall, signal: AbortSignal): Promise<unknown> {
  const target = new URL(call.url)
  target.searchParams.set('gid', call.gid)
  target.searchParams.set('trans_type', call.transType)
  target.searchParams.set('branch_id', call.branchId)
  target.searchParams.set('op', call.op)
  const method = call.payload === undefined ? 'GET' : 'POST'
  const what = `${call.op} of branch ${call.branchId}: ${method} ${call.url}`
  let response: Response
  try {
    response = await fetch(target, {
      method,
      headers: { 'content-type': 'application/json', ...call.headers },
      ...(call.payload === undefined ? {} : { body: call.payload }),
      signal,
    })
  } catch (error) {
    throw new TxError(`${what} failed (${describeFetch(error)}); will retry`, {
      code: 'BRANCH_UNREACHABLE',
      retryable: true,
      gid: call.gid,
      cause: error,
    })
  }
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    // A 200 whose body (possibly DTM's FAILURE) did not arrive says nothing for sure: ask again.
    throw new TxError(
      `${what} answered ${response.status} but its body was cut off (${describeFetch(error)}); will retry`,
      { code: 'BRANCH_UNREACHABLE', retryable: true, gid: call.gid, cause: error },
    )
  }
  const detail = `${what} answered ${response.status}${text ? ` (${text.slice(0, 200)})` : ''}`
  // DTM's rule (RespAsErrorCompatible): the status code or the words in the body.
  if (response.status === 425 || text.includes('ONGOING')) {
    throw new TxError(`${detail}; still ongoing`, { code: 'BRANCH_ONGOING', retryable: true, gid: call.gid })
  }
  if (response.status === 409 || text.includes('FAILURE')) {
    throw new TxError(detail, { code: 'BRANCH_FAILED', gid: call.gid })
  }
  if (!response.ok) {
    throw new TxError(`${detail}; will retry`, { code: 'BRANCH_UNAVAILABLE', retryable: true, gid: call.gid })
  }
  if (text === '') return null
  try {
    return JSON.parse(text)
  } catch {
    return text.slice(0, 1000)
  }
}

function describeFetch(error: unknown): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } }
  if (e?.name === 'TimeoutError') return 'timed out'
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(error)
}
