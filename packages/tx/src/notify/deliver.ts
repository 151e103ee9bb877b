/** The two HTTP calls of a notification: the delivery POST and the reconciliation query. */
import { TxError } from '../errors.js'
import { exchange } from '../http/exchange.js'

/** What a notification sends and where, as stored in the log. */
export interface NotifyInput {
  readonly url: string
  readonly body: unknown
  /** Waits between tries, in ms. */
  readonly schedule: readonly number[]
  readonly reconcile: string | null
  readonly headers: Readonly<Record<string, string>>
  readonly timeoutMs: number
}

/**
 * POSTs the body as JSON with `Idempotency-Key: <gid>` (the receiver dedupes by it: a try whose answer was lost
 * is sent again). 2xx is delivered (even with its body cut off: the receiver said yes); anything else rejects with a
 * non-retryable TxError: the schedule, not the coordinator's backoff, decides when to try again.
 */
export async function deliver(n: NotifyInput, gid: string, signal: AbortSignal): Promise<{ status: number }> {
  const got = await exchange(
    n.url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': gid, ...n.headers },
      body: JSON.stringify(n.body),
    },
    signal,
    n.timeoutMs,
  )
  if (got.status !== undefined && got.status >= 200 && got.status < 300) return { status: got.status }
  if (got.failed !== undefined) {
    throw new TxError(`POST ${n.url} ${got.failed}`, { code: 'NOTIFY_UNREACHABLE', gid, cause: got.error })
  }
  throw new TxError(`POST ${n.url} answered ${got.status}${got.text ? ` (${got.text.slice(0, 200)})` : ''}`, {
    code: 'NOTIFY_REJECTED',
    gid,
  })
}

/**
 * Asks the receiver whether it already has notification `gid`: POST `{ gid, body }` to the reconcile URL.
 * 2xx means it has it, unless the JSON answer is `{ "received": false }`; 404 means it has not. Anything else,
 * a 2xx whose body was cut off included, rejects (the coordinator then sends anyway: the receiver dedupes by the
 * idempotency key).
 */
export async function reconcile(
  n: NotifyInput & { reconcile: string },
  gid: string,
  signal: AbortSignal,
): Promise<'received' | 'missing'> {
  const got = await exchange(
    n.reconcile,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...n.headers },
      body: JSON.stringify({ gid, body: n.body }),
    },
    signal,
    n.timeoutMs,
  )
  if (got.status === 404) return 'missing'
  if (got.failed !== undefined) {
    throw new TxError(`reconcile POST ${n.reconcile} ${got.failed}`, {
      code: 'NOTIFY_RECONCILE',
      gid,
      cause: got.error,
    })
  }
  if (got.status < 200 || got.status >= 300) {
    throw new TxError(`reconcile POST ${n.reconcile} answered ${got.status}`, { code: 'NOTIFY_RECONCILE', gid })
  }
  try {
    return (JSON.parse(got.text) as { received?: unknown })?.received === false ? 'missing' : 'received'
  } catch {
    return 'received'
  }
}
