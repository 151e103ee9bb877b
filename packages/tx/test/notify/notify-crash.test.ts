/**
 * A coordinator process driving a notification is killed with SIGKILL while it waits between two tries; the
 * coordinator in this process takes the notification over and keeps the schedule: the next try comes no
 * earlier than the logged failure plus its wait, nothing is sent twice, and it is delivered.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Coordinator, createCoordinator } from '../../src/index.js'
import { tempDir } from '../support/databases.js'
import { eventually } from '../support/eventually.js'
import { type Receiver, startReceiver } from './receiver.js'

const CHILD = fileURLToPath(new URL('./notify-coordinator.ts', import.meta.url))

describe('notification: coordinator killed mid-schedule', () => {
  const tmp = tempDir()
  const storeUrl = `sqlite:${tmp.dir}/tx.db`
  let tc: Coordinator
  let rx: Receiver

  beforeAll(async () => {
    rx = await startReceiver(2)
    tc = createCoordinator({ store: storeUrl, recoverEveryMs: 100 })
  })
  afterAll(async () => {
    await tc?.close()
    await rx?.close()
    tmp.remove()
  })

  it('a new coordinator resumes the schedule from the log: the third try waits for the rest of the second wait', async () => {
    const gid = 'n-crash'
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, storeUrl, rx.url, gid, '100ms,2500ms,100ms'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise<string | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)))
    // Two failed tries, the second logged with its wait: kill it in that wait.
    const failed = await eventually(async () => {
      const tx = await tc.get(gid)
      const retries = tx?.history.filter((e) => e.type === 'notify-retry') ?? []
      return retries.length === 2 && retries[1]
    }, 20_000)
    child.kill('SIGKILL')
    expect(await exited).toBe('SIGKILL')
    expect(rx.deliveries).toHaveLength(2)
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === 'succeeded' && tx
    }, 20_000)
    expect(rx.deliveries.map((d) => d.status)).toEqual([503, 503, 200])
    // The schedule survived the crash: not tried again at once by the new coordinator.
    expect(rx.deliveries[2]?.at ?? 0).toBeGreaterThanOrEqual(failed.at + 2500)
    expect(done.history.map((e) => e.type)).toEqual([
      'created',
      'branch-start',
      'notify-retry',
      'branch-start',
      'notify-retry',
      'recovered',
      'branch-start',
      'branch-succeeded',
      'succeeded',
    ])
    expect(done.history[5]?.token).toBeGreaterThan(done.history[0]?.token ?? 0n)
  })
})
