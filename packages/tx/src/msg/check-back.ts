import { TxError } from '../errors.js'
import { exchange } from '../http/exchange.js'
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
  return async (gid, signal) => {
    const target = new URL(url)
    for (const [k, v] of Object.entries({ gid, trans_type: 'msg', branch_id: '00', op: 'msg' })) {
      target.searchParams.set(k, v)
    }
    const got = await exchange(target, {}, signal, 3_000)
    // A cut-off body may have said FAILURE or ONGOING: no answer either.
    if (got.failed !== undefined) {
      throw new TxError(`${who} check-back: GET ${url} ${got.failed}; will ask again`, {
        code: 'CHECK_BACK_UNREACHABLE',
        retryable: true,
        gid,
        cause: got.error,
      })
    }
    if (got.status === 409 || /"dtm_result"\s*:\s*"FAILURE"/.test(got.text)) return 'rolled-back'
    if (got.status >= 200 && got.status < 300 && !/"dtm_result"\s*:\s*"ONGOING"/.test(got.text)) return 'committed'
    throw new TxError(`${who} check-back: GET ${url} answered ${got.status}; will ask again`, {
      code: 'CHECK_BACK_UNAVAILABLE',
      retryable: true,
      gid,
    })
  }
}
