import { TxError } from '../errors.js'
import { withDeadline } from '../http/with-deadline.js'
import { producerKind } from './producer-db.js'
import { type LocalOutcome, queryPrepared } from './query-prepared.js'

/** A check-back written by the application: must answer definitively (or throw to be asked again later). */
export type CheckBackFn = (ctx: {
  readonly gid: string
  readonly signal: AbortSignal
}) => LocalOutcome | Promise<LocalOutcome>

/**
 * How the coordinator learns whether a prepared message's local transaction committed:
 * - the producer's database (a pg Pool, mysql2 pool or better-sqlite3 Database): {@link queryPrepared} on it,
 *   in process;
 * - a URL: DTM's `QueryPrepared` call, `GET url?gid=…&trans_type=msg&branch_id=00&op=msg`; 2xx means
 *   committed, 409 (or a body `{"dtm_result":"FAILURE"}`) rolled back, anything else is asked again later;
 * - a function answering `committed` or `rolled-back`.
 */
export type CheckBack = string | CheckBackFn | object

/** The resolved check-back: one question, one definitive answer, or a (retried) error. */
export type AskCheckBack = (gid: string, signal: AbortSignal) => Promise<LocalOutcome>

/** Validates a check-back option (no I/O). */
export function checkBackOf(option: unknown, who: string, table: string): AskCheckBack {
  if (typeof option === 'function') {
    const fn = option as CheckBackFn
    return async (gid, signal) => outcomeOf(await fn({ gid, signal }), who)
  }
  if (typeof option === 'string') return urlCheckBack(checkUrl(option, who), who)
  producerKind(option, `${who} checkBack`)
  return (gid) => queryPrepared(option as object, gid, { table })
}

function outcomeOf(value: unknown, who: string): LocalOutcome {
  if (value === 'committed' || value === 'rolled-back') return value
  throw new TxError(
    `latchkey-tx: ${who} checkBack answered ${JSON.stringify(value)}, not 'committed' or 'rolled-back'`,
    {
      code: 'CHECK_BACK_FAILED',
      retryable: true,
    },
  )
}

function checkUrl(url: string, who: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new TypeError(`latchkey-tx: ${who} checkBack cannot parse ${JSON.stringify(url)} as a URL`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new RangeError(`latchkey-tx: ${who} checkBack needs an http: or https: URL, received ${parsed.protocol}`)
  }
  return url
}

function urlCheckBack(url: string, who: string): AskCheckBack {
  return (gid, signal) => withDeadline(signal, 3_000, (within) => askUrl(url, who, gid, within))
}

async function askUrl(url: string, who: string, gid: string, signal: AbortSignal): Promise<LocalOutcome> {
  const target = new URL(url)
  for (const [k, v] of Object.entries({ gid, trans_type: 'msg', branch_id: '00', op: 'msg' })) {
    target.searchParams.set(k, v)
  }
  let response: Response
  try {
    response = await fetch(target, { signal })
  } catch (error) {
    throw new TxError(`${who} check-back: GET ${url} failed (${(error as Error).message}); will ask again`, {
      code: 'CHECK_BACK_UNREACHABLE',
      retryable: true,
      gid,
      cause: error,
    })
  }
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    // The body may have said FAILURE or ONGOING: a cut-off answer is no answer.
    throw new TxError(
      `${who} check-back: GET ${url} answered ${response.status} but its body was cut off (${(error as Error).message}); will ask again`,
      { code: 'CHECK_BACK_UNREACHABLE', retryable: true, gid, cause: error },
    )
  }
  if (response.status === 409 || /"dtm_result"\s*:\s*"FAILURE"/.test(text)) return 'rolled-back'
  if (response.ok && !/"dtm_result"\s*:\s*"ONGOING"/.test(text)) return 'committed'
  throw new TxError(`${who} check-back: GET ${url} answered ${response.status}; will ask again`, {
    code: 'CHECK_BACK_UNAVAILABLE',
    retryable: true,
    gid,
  })
}
