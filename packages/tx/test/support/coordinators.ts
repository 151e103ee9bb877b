import { type CoordinatorOptions, createCoordinator, type TxEvent } from '../../src/index.js'
import { tempDir } from './databases.js'

/** Fast retries for tests: 5 ms, doubling to 20 ms, 3 attempts then parked. */
export const FAST_RETRY = { firstMs: 5, maxMs: 20, attempts: 3 }

/**
 * A SQLite file in a temporary directory and coordinators on it (each with its own store and lock backend, as
 * separate processes would have). `close()` closes them all and removes the directory.
 */
export function sqliteHarness() {
  const tmp = tempDir()
  const url = `sqlite:${tmp.dir}/tx.db`
  const opened: { close(): Promise<void> }[] = []
  const events: TxEvent[] = []
  return {
    url,
    events,
    coordinator(options: Partial<CoordinatorOptions> = {}) {
      const tc = createCoordinator({
        store: url,
        retry: FAST_RETRY,
        recover: false,
        onEvent: (e) => events.push(e),
        ...options,
      })
      opened.push(tc)
      return tc
    },
    async close() {
      for (const tc of opened) await tc.close()
      tmp.remove()
    },
  }
}
