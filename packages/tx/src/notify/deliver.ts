/** The two HTTP calls of a notification: the delivery POST and the reconciliation query. */
import { TxError } from '../errors.js'
import { withDeadline } from '../http/with-deadline.js'

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

function describeFetch(error: unknown): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string } }
  if (e?.name === 'TimeoutError') return 'timed out'
  return e?.cause?.code ?? e?.message ?? String(error)
}

/**
 * POSTs the body as JSON with `Idempotency-Key: <gid>` (the receiver dedupes by it: a try whose answer was lost
 * is sent again). 2xx is delivered; anything else rejects with a non-retryable TxError: the schedule, not the
 * coordinator's backoff, decides when to try again.
 */
export function deliver(n: NotifyInput, gid: string, signal: AbortSignal): Promise<{ status: number }> {
  return withDeadline(signal, n.timeoutMs, (within) => deliverWithin(n, gid, within))
}

async function deliverWithin(n: NotifyInput, gid: string, signal: AbortSignal): Promise<{ status: number }> {
  let response: Response
  try {
    response = await fetch(n.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': gid, ...n.headers },
      body: JSON.stringify(n.body),
      signal,
    })
  } catch (error) {
    throw new TxError(`POST ${n.url} failed (${describeFetch(error)})`, {
      code: 'NOTIFY_UNREACHABLE',
      gid,
      cause: error,
    })
  }
  const text = await response.text().catch(() => '')
  if (response.ok) return { status: response.status }
  throw new TxError(`POST ${n.url} answered ${response.status}${text ? ` (${text.slice(0, 200)})` : ''}`, {
    code: 'NOTIFY_REJECTED',
    gid,
  })
}

/**
 * Asks the receiver whether it already has notification `gid`: POST `{ gid, body }` to the reconcile URL.
 * 2xx means it has it, unless the JSON answer is `{ "received": false }`; 404 means it has not. Anything else
 * rejects (the coordinator then sends anyway: the receiver dedupes by the idempotency key).
 */
export function reconcile(
  n: NotifyInput & { reconcile: string },
  gid: string,
  signal: AbortSignal,
): Promise<'received' | 'missing'> {
  return withDeadline(signal, n.timeoutMs, (within) => reconcileWithin(n, gid, within))
}

async function reconcileWithin(
  n: NotifyInput & { reconcile: string },
  gid: string,
  signal: AbortSignal,
): Promise<'received' | 'missing'> {
  let response: Response
  try {
    response = await fetch(n.reconcile, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...n.headers },
      body: JSON.stringify({ gid, body: n.body }),
      signal,
    })
  } catch (error) {
    throw new TxError(`reconcile POST ${n.reconcile} failed (${describeFetch(error)})`, {
      code: 'NOTIFY_RECONCILE',
      gid,
    })
  }
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    // The body may have said { "received": false }: a cut-off answer is no answer (the notification is sent).
    throw new TxError(
      `reconcile POST ${n.reconcile} answered ${response.status} but its body was cut off (${describeFetch(error)})`,
      {
        code: 'NOTIFY_RECONCILE',
        gid,
      },
    )
  }
  if (response.status === 404) return 'missing'
  if (!response.ok) {
    throw new TxError(`reconcile POST ${n.reconcile} answered ${response.status}`, { code: 'NOTIFY_RECONCILE', gid })
  }
  try {
    return (JSON.parse(text) as { received?: unknown })?.received === false ? 'missing' : 'received'
  } catch {
    return 'received'
  }
}
