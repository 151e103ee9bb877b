/**
 * Runs `run` and reports how long it took and what it threw (`undefined` when it resolved), for tests that
 * bound how quickly a call fails.
 *
 * @example
 * const { error, ms } = await timed(() => locks.mutex('m').acquire({ waitMs: 200 }))
 */
export async function timed(run: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now()
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  )
  return { error, ms: performance.now() - started }
}
