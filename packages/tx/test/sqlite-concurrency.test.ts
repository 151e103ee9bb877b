/**
 * The embedded default under concurrency: two transactions at once on a SQLite log with its default leases. The
 * leases once shared the log's file through a second connection; better-sqlite3 waits for a busy file
 * synchronously, so a lease write while the log held a transaction open froze the process for the whole 5 s busy
 * timeout (found by the benchmark: 2 workers x 20 sagas took over 10 s, 1 worker under 1 s).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { sqliteHarness } from './support/coordinators.js'

/** Far below the 5 s busy timeout a stall costs, far above what 40 two-step sagas take even on a loaded machine. */
const STALL_MS = 4_000

let h: ReturnType<typeof sqliteHarness>
afterEach(async () => {
  await h.close()
})

describe('SQLite log with its default leases', () => {
  it('two workers running sagas at once never stall on a busy file', async () => {
    h = sqliteHarness()
    const tc = h.coordinator()
    const saga = tc
      .saga('pair')
      .step('a', { action: () => 1 })
      .step('b', { action: () => 2 })
    const work = Promise.all(
      [0, 1].map(async () => {
        const statuses: string[] = []
        for (let i = 0; i < 20; i++) statuses.push((await saga.run({})).status)
        return statuses
      }),
    )
    let timer: NodeJS.Timeout | undefined
    const stalled = new Promise<'stalled'>((resolve) => {
      timer = setTimeout(() => resolve('stalled'), STALL_MS)
    })
    const outcome = await Promise.race([work, stalled]).finally(() => clearTimeout(timer))
    expect(outcome).not.toBe('stalled')
    await work
    expect((outcome as string[][]).flat()).toEqual(Array(40).fill('succeeded'))
  }, 30_000)
})
