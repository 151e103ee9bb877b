/**
 * Polls `probe` until it returns something `done` accepts, or fails after `timeoutMs` with the last value
 * seen: waits on a condition instead of a guessed sleep.
 */
export async function eventually<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  {
    timeoutMs = 10_000,
    everyMs = 50,
    what = 'condition',
  }: { timeoutMs?: number; everyMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (done(value)) return value
    if (performance.now() > deadline) {
      throw new Error(`${what} not reached within ${timeoutMs} ms; last value: ${String(value)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}
