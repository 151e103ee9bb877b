/** Monotonic milliseconds; leases are timed with this, never with the wall clock. */
export function monotonicNow(): number {
  return performance.now()
}

/** The wall-clock time (epoch ms) that corresponds to a monotonic instant. */
export function wallTimeAt(monotonic: number): number {
  return Date.now() + (monotonic - performance.now())
}

/**
 * Resolves after `ms`; rejects with `signal.reason` when the signal aborts. The timer is not unref'ed: a caller
 * waiting for a lock is pending work that must keep the process alive.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason)
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** `ms` scaled by a random factor in [0.5, 1): spreads retries of many waiters apart. */
export function jitter(ms: number): number {
  return ms * (0.5 + Math.random() * 0.5)
}

/**
 * The margin a lease's local deadline keeps below its TTL, for clock drift between this process and the
 * server that times the lease (RedLock's drift factor: 1 % plus 2 ms).
 */
export function driftMs(ttlMs: number): number {
  return Math.floor(ttlMs * 0.01) + 2
}
