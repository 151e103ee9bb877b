/**
 * Milliseconds on the host's monotonic clock. Every lab process (runner, referee, clients) reads the same
 * CLOCK_MONOTONIC, so their histories share one time axis without any clock synchronisation.
 */
export function nowMs(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000
}

/** Resolves after `ms` milliseconds (the client's simulated work; never used to order lab events). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
