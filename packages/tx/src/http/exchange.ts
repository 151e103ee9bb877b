/**
 * One outgoing HTTP exchange of the coordinator (a branch call, a check-back, a notification): the request and the
 * whole answer, under a deadline, told apart from the ways it can fail.
 *
 * The deadline is a controller whose timer closes over it, cleared when the exchange ends, not
 * `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: on Node 20 the composite holds its sources only weakly and
 * the timeout's timer holds its signal only weakly, so a garbage collection during the call can reclaim the timeout
 * signal, and the call then waits as long as the peer keeps the connection open, which a partitioned peer does
 * forever (nodejs/node#57736). The listener on the caller's long-lived signal is removed at the end too (`any`
 * would leave one behind per call).
 *
 * The body is read under the same deadline. An answer whose body is cut off is kept apart from a whole one: where
 * the body carries the outcome (a result, DTM's FAILURE or ONGOING, `{ "received": false }`) a 200 without it says
 * nothing for sure.
 */

/** What came back: the status and the whole body, or why not. */
export type Exchange =
  | { readonly status: number; readonly text: string; readonly failed?: undefined }
  | {
      /** For a message: `failed (timed out)`, `answered 200 but its body was cut off (ECONNRESET)`. */
      readonly failed: string
      /** The status when the answer's head arrived. */
      readonly status?: number
      readonly error: unknown
    }

export async function exchange(
  url: string | URL,
  init: Omit<RequestInit, 'signal'>,
  parent: AbortSignal,
  ms: number,
): Promise<Exchange> {
  const controller = new AbortController()
  const onAbort = () => controller.abort(parent.reason)
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms)
  if (parent.aborted) onAbort()
  else parent.addEventListener('abort', onAbort, { once: true })
  try {
    let response: Response
    try {
      response = await fetch(url, { ...init, signal: controller.signal })
    } catch (error) {
      return { failed: `failed (${reasonOf(error)})`, error }
    }
    try {
      return { status: response.status, text: await response.text() }
    } catch (error) {
      return {
        failed: `answered ${response.status} but its body was cut off (${reasonOf(error)})`,
        status: response.status,
        error,
      }
    }
  } finally {
    clearTimeout(timer)
    parent.removeEventListener('abort', onAbort)
  }
}

function reasonOf(error: unknown): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } }
  if (e?.name === 'TimeoutError') return 'timed out'
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(error)
}
