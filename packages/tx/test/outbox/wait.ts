/** Ordering helpers for the outbox tests: a poll until a condition holds, and a latch. Never a fixed sleep. */
import { setTimeout as delay } from 'node:timers/promises'

/** Polls `check` until it returns a truthy value (returned) or `timeoutMs` passes (then throws `what`). */
export async function eventually<T>(what: string, check: () => T | Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await check()
      if (value) return value
    } catch (error) {
      last = error
    }
    if (Date.now() > deadline) {
      const because = last === undefined ? '' : ` (last check threw: ${(last as Error).message})`
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${because}`, { cause: last })
    }
    await delay(25)
  }
}

/** A one-shot latch: `open()` resolves every `wait()`. */
export function latch(): { open: () => void; wait: () => Promise<void>; readonly isOpen: boolean } {
  let open!: () => void
  let isOpen = false
  const opened = new Promise<void>((resolve) => {
    open = () => {
      isOpen = true
      resolve()
    }
  })
  return {
    open,
    wait: () => opened,
    get isOpen() {
      return isOpen
    },
  }
}
