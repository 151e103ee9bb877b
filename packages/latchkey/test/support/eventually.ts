/**
 * Polls `check` until it returns true (or a value that is not false/undefined), every `everyMs`, for at most
 * `withinMs`; then fails with `what`. For tests that must wait for something done in the background, without a
 * fixed sleep.
 */
export async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  withinMs = 3_000,
  everyMs = 20,
) {
  const deadline = performance.now() + withinMs
  for (;;) {
    if (await check()) return
    if (performance.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}
