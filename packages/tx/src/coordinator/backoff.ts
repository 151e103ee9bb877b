import type { RetryPolicy } from './options.js'

/**
 * The delay after failed attempt `attempt` (1-based): `firstMs * 2^(attempt-1)` capped at `maxMs`, then
 * "equal jitter" (a random point in its upper half) so that branches failing together do not retry together.
 */
export function backoffMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exp = Math.min(policy.maxMs, policy.firstMs * 2 ** Math.min(attempt - 1, 40))
  return Math.round(exp / 2 + (random() * exp) / 2)
}

/** Resolves after `ms`, or rejects with `signal.reason` as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason)
      return
    }
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
