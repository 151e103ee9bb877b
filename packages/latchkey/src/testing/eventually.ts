/**
 * Polls `check` until it returns true, every `everyMs`, for at most `withinMs`; then rejects naming `what`. For
 * tests that wait for something done in the background (a renewal, a wake-up, a server noticing a dead session)
 * without guessing how long it takes: on a loaded machine a fixed sleep is either too short (flaky) or too long.
 *
 * Defaults: `withinMs` 3000, `everyMs` 20.
 *
 * @example
 * await eventually('the watchdog renewed once', () => events.includes('renewed'))
 */
export async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  withinMs = 3_000,
  everyMs = 20,
): Promise<void> {
  const deadline = performance.now() + withinMs
  for (;;) {
    if (await check()) return
    if (performance.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** A one-shot gate: `wait()` resolves once `open()` has been called (before or after). */
export interface Latch {
  open(): void
  wait(): Promise<void>
  readonly isOpen: boolean
}

/**
 * A latch that one side of a test opens when something has happened (a callback started, a lock was granted) and
 * the other side awaits, so events are ordered by what happened, never by a guess of how long it takes.
 *
 * @example
 * const holding = latch()
 * const done = lock.withLock(async () => { holding.open(); await release.wait() })
 * await holding.wait() // the lock is held now
 */
export function latch(): Latch {
  let isOpen = false
  let resolve = (): void => undefined
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return {
    open() {
      isOpen = true
      resolve()
    },
    wait: () => promise,
    get isOpen() {
      return isOpen
    },
  }
}
