/** Polls `check` until it stops throwing (or returns a truthy value), failing after `timeoutMs`. Never a fixed sleep. */
export async function eventually<T>(
  check: () => T | false | undefined | Promise<T | false | undefined>,
  timeoutMs = 10_000,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      const value = await check()
      if (value !== false && value !== undefined && value !== null) return value as T
      if (Date.now() > deadline) throw new Error(`eventually: still ${String(value)} after ${timeoutMs} ms`)
    } catch (error) {
      if (Date.now() > deadline) throw error
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** A promise with its resolve function exposed: a latch a test opens when it decides. */
export function latch<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void
  const promise = new Promise<T>((resolve) => {
    open = resolve
  })
  return { promise, open }
}
