import type { BranchContext, BranchFn } from '../branch.js'
import { TxError } from '../errors.js'
import { exchange } from './exchange.js'

/** Options of {@link http}. */
export interface HttpBranchOptions {
  /** Per-request deadline; a request that outlives it is retried. Default 3 000 (DTM's RequestTimeout). */
  timeoutMs?: number
  /** Extra request headers (e.g. authorization). */
  headers?: Record<string, string>
}

const TIMEOUT_MAX = 2_147_483_647

function checkUrl(url: unknown): string {
  if (typeof url !== 'string') throw new TypeError(`latchkey-tx: http(url) needs a URL string, received ${typeof url}`)
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new TypeError(`latchkey-tx: http(url) cannot parse ${JSON.stringify(url)} as a URL`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new RangeError(`latchkey-tx: http(url) needs an http: or https: URL, received ${parsed.protocol}`)
  }
  return url
}

function checkOptions(options: HttpBranchOptions): { timeoutMs: number; headers: Record<string, string> } {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      `latchkey-tx: http options must be an object { timeoutMs?, headers? }, received ${String(options)}`,
    )
  }
  const timeoutMs = options.timeoutMs ?? 3_000
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 1 || timeoutMs > TIMEOUT_MAX) {
    throw new RangeError(
      `latchkey-tx: http timeoutMs must be between 1 and ${TIMEOUT_MAX}, received ${String(timeoutMs)}`,
    )
  }
  return { timeoutMs, headers: { ...(options.headers ?? {}) } }
}

/**
 * A branch operation over HTTP, with DTM's result protocol: POST `{ gid, branch, op, input }` as JSON;
 * 2xx is success (a JSON body becomes the result), 409 is failure (aborts a forward operation; a compensation,
 * confirm or cancel is retried anyway: those must eventually succeed), 425 means "ongoing, ask again later"
 * (a body `{ "dtm_result": "FAILURE" }` or `"ONGOING"`, DTM's older way of saying so with a 200, counts the same),
 * anything else (5xx, timeout, refused connection) is retried with the coordinator's backoff.
 *
 * @example
 * tc.saga('order').step('charge', { action: http('http://pay/charge'), compensate: http('http://pay/refund') })
 */
export function http<I = unknown>(url: string, options: HttpBranchOptions = {}): BranchFn<I> {
  const target = checkUrl(url)
  const { timeoutMs, headers } = checkOptions(options)
  return (ctx) => post(target, ctx, timeoutMs, headers)
}

/**
 * The three TCC operations on one URL: the `op` field of the body says which.
 *
 * @example
 * tc.tcc('transfer', { in: http.tcc('http://bank-b/in'), out: http.tcc('http://bank-a/out') })
 */
http.tcc = <I = unknown>(url: string, options: HttpBranchOptions = {}) => {
  const op = http<I>(url, options)
  return { try: op, confirm: op, cancel: op }
}

async function post(
  url: string,
  ctx: BranchContext,
  timeoutMs: number,
  headers: Record<string, string>,
): Promise<unknown> {
  const where = { gid: ctx.gid }
  const what = `${ctx.op} of "${ctx.branch}": POST ${url}`
  const got = await exchange(
    url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ gid: ctx.gid, branch: ctx.branch, op: ctx.op, input: ctx.input }),
    },
    ctx.signal,
    timeoutMs,
  )
  if (got.failed !== undefined) {
    throw new TxError(`${what} ${got.failed}; will retry`, {
      code: 'BRANCH_UNREACHABLE',
      retryable: true,
      cause: got.error,
      ...where,
    })
  }
  const { status, text } = got
  const body = parseBody(text)
  // DTM's older protocol answers 200 with the outcome in the body: { "dtm_result": "FAILURE" | "ONGOING" }.
  const said = dtmResult(body)
  if (status >= 200 && status < 300 && said === undefined) return body
  const detail = `${what} answered ${status}${text ? ` (${text.slice(0, 200)})` : ''}`
  if (status === 409 || said === 'FAILURE') throw new TxError(detail, { code: 'BRANCH_FAILED', ...where })
  if (status === 425 || said === 'ONGOING')
    throw new TxError(`${detail}; still ongoing`, { code: 'BRANCH_ONGOING', retryable: true, ...where })
  throw new TxError(`${detail}; will retry`, { code: 'BRANCH_UNAVAILABLE', retryable: true, ...where })
}

function dtmResult(body: unknown): 'FAILURE' | 'ONGOING' | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const result = (body as { dtm_result?: unknown }).dtm_result
  return result === 'FAILURE' || result === 'ONGOING' ? result : undefined
}

function parseBody(text: string): unknown {
  if (text === '') return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
