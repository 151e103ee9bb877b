/**
 * Runs one outgoing HTTP exchange (request and the answer's body) under a signal that aborts when the caller's
 * does, or with a `TimeoutError` once `ms` have passed.
 *
 * `AbortSignal.any([signal, AbortSignal.timeout(ms)])` says the same but is not safe on Node 20: the composite
 * holds its sources only weakly and the timeout's timer holds its signal only weakly, so a garbage collection
 * during the call can reclaim the timeout signal, and the call then waits as long as the peer keeps the
 * connection open, which a partitioned peer does forever (nodejs/node#57736). Here the timer closes over its
 * controller; when the exchange ends the timer is cleared and the listener on the caller's long-lived signal
 * removed (which `any` would leave behind, one per call).
 */
export async function withDeadline<T>(
  parent: AbortSignal,
  ms: number,
  exchange: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController()
  const onAbort = () => controller.abort(parent.reason)
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms)
  if (parent.aborted) onAbort()
  else parent.addEventListener('abort', onAbort, { once: true })
  try {
    return await exchange(controller.signal)
  } finally {
    clearTimeout(timer)
    parent.removeEventListener('abort', onAbort)
  }
}
