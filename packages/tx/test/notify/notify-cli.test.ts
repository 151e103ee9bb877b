/**
 * `latchkey-tx replay GID` (the CLI's `retry` under the name operators of notifications look for), as a child
 * process on the log of a parked notification: it resends it on a fresh schedule, and `list --kind notify`
 * shows it.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteHarness } from '../support/coordinators.js'
import { runCli } from '../support/server-process.js'
import { startReceiver } from './receiver.js'

describe('latchkey-tx replay', () => {
  const h = sqliteHarness()
  afterAll(async () => {
    await h.close()
  })

  it('resends a parked notification; list --kind notify shows it succeeded', async () => {
    const rx = await startReceiver(100)
    try {
      const tc = h.coordinator()
      const parked = await tc.notify({ url: rx.url, body: { n: 1 }, schedule: ['10ms'], gid: 'n-cli', wait: true })
      expect(parked.status).toBe('parked')
      await tc.close()
      rx.failFirst = 0
      const replayed = await runCli(['replay', 'n-cli', '--store', h.url, '--json'])
      expect(replayed.stderr).toBe('')
      expect(JSON.parse(replayed.stdout)).toEqual({ gid: 'n-cli', status: 'succeeded' })
      expect(rx.deliveries.map((d) => d.status)).toEqual([503, 503, 200])
      const listed = await runCli(['list', '--kind', 'notify', '--store', h.url, '--json'])
      expect(JSON.parse(listed.stdout)).toEqual([
        expect.objectContaining({ gid: 'n-cli', kind: 'notify', status: 'succeeded' }),
      ])
      expect((await runCli(['list', '--kind', 'bogus', '--store', h.url])).code).toBe(2)
    } finally {
      await rx.close()
    }
  })
})
