/**
 * Best-effort notification against a real local HTTP receiver: tries on the schedule until it answers 2xx,
 * the reconcile query settling a try whose answer was lost, parking after the last try (with the `parked`
 * alert event), replay with `tc.retry(gid)`, and bad arguments.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Coordinator, TxParkedError } from '../../src/index.js'
import { sqliteHarness } from '../support/coordinators.js'
import { eventually } from '../support/eventually.js'
import { type Receiver, startReceiver } from './receiver.js'

describe('tc.notify', () => {
  const h = sqliteHarness()
  let tc: Coordinator
  let rx: Receiver

  beforeAll(() => {
    tc = h.coordinator()
  })
  afterEach(async () => {
    await rx?.close()
  })
  afterAll(async () => {
    await h.close()
  })

  it('tries again on its schedule until the receiver takes it (failing twice first)', async () => {
    rx = await startReceiver(2)
    const body = { order: 42, event: 'paid' }
    const r = await tc.notify({ url: rx.url, body, schedule: ['100ms', '200ms', '300ms'], gid: 'n-flaky', wait: true })
    expect(r.status).toBe('succeeded')
    expect(rx.deliveries.map((d) => d.status)).toEqual([503, 503, 200])
    expect(rx.deliveries.every((d) => d.key === 'n-flaky' && JSON.stringify(d.body) === JSON.stringify(body))).toBe(
      true,
    )
    const [a, b, c] = rx.deliveries.map((d) => d.at)
    expect((b ?? 0) - (a ?? 0)).toBeGreaterThanOrEqual(95)
    expect((c ?? 0) - (b ?? 0)).toBeGreaterThanOrEqual(195)
    const tx = await tc.get('n-flaky')
    expect(tx).toMatchObject({ kind: 'notify', name: 'notify', status: 'succeeded' })
    expect(tx?.history.filter((e) => e.type === 'notify-retry').map((e) => e.detail)).toEqual([
      'try 1 failed (POST ' + rx.url + ' answered 503 (not now)); next in 100 ms',
      'try 2 failed (POST ' + rx.url + ' answered 503 (not now)); next in 200 ms',
    ])
    expect(tx?.branches[0]).toMatchObject({ id: 'deliver', status: 'succeeded', attempts: 3 })
  })

  it('asks the reconcile URL before a retry: a receiver that already has it is not sent it again', async () => {
    rx = await startReceiver(1)
    rx.storeOnFailure = true // it stored the first try, but its answer was an error
    const events: string[] = []
    const r = await tc.notify({
      url: rx.url,
      body: { n: 1 },
      schedule: ['50ms'],
      reconcile: rx.reconcileUrl,
      gid: 'n-reconciled',
      wait: true,
    })
    expect(r.status).toBe('succeeded')
    expect(rx.deliveries).toHaveLength(1)
    expect(rx.reconciles).toEqual([expect.objectContaining({ gid: 'n-reconciled', answer: 200 })])
    const tx = await tc.get('n-reconciled')
    events.push(...(tx?.history.map((e) => e.type) ?? []))
    expect(events).toEqual(['created', 'branch-start', 'notify-retry', 'reconciled', 'succeeded'])
    expect(tx?.branches[0]?.result).toEqual({ reconciled: true })
  })

  it('parks after the last try (the parked alert event), and tc.retry replays it on a fresh schedule', async () => {
    rx = await startReceiver(100)
    const seen: { type: string; error?: unknown }[] = []
    const tc2 = h.coordinator({ onEvent: (e) => e.gid === 'n-parked' && seen.push(e) })
    const r = await tc2.notify({
      url: rx.url,
      body: { n: 2 },
      schedule: [20, '30ms'],
      reconcile: rx.reconcileUrl,
      gid: 'n-parked',
      wait: true,
    })
    expect(r.status).toBe('parked')
    expect(r.error).toBeInstanceOf(TxParkedError)
    expect(rx.deliveries.map((d) => d.status)).toEqual([503, 503, 503])
    // Asked before each retry (not before the first try): the receiver has not got it.
    expect(rx.reconciles.map((x) => x.answer)).toEqual([404, 404])
    const parked = seen.find((e) => e.type === 'parked')
    expect(parked?.error).toBeInstanceOf(TxParkedError)
    expect((await tc2.get('n-parked'))?.status).toBe('parked')

    rx.failFirst = 0
    const replayed = await tc2.retry('n-parked')
    expect(replayed.status).toBe('succeeded')
    expect(rx.deliveries.map((d) => d.status)).toEqual([503, 503, 503, 200])
    expect(rx.reconciles.map((x) => x.answer)).toEqual([404, 404, 404])
    const tx = await tc2.get('n-parked')
    expect(tx?.history.map((e) => e.type).slice(-4)).toEqual([
      'retried',
      'branch-start',
      'branch-succeeded',
      'succeeded',
    ])
  })

  it('resolves once durable unless asked to wait; the list shows notifications by kind', async () => {
    rx = await startReceiver(0)
    const r = await tc.notify({ url: rx.url, body: 'plain text is JSON too', gid: 'n-async' })
    expect(r).toEqual({ gid: 'n-async', status: 'submitted', results: {} })
    const listed = await tc.list({ kind: 'notify' })
    expect(listed.map((t) => t.gid)).toContain('n-async')
    await eventually(async () => (await tc.get('n-async'))?.status === 'succeeded')
    expect(rx.deliveries[0]?.body).toBe('plain text is JSON too')
  })

  it('refuses bad arguments before any I/O', async () => {
    const ok = { url: 'http://127.0.0.1:1/x', body: {} }
    await expect(tc.notify(undefined as never)).rejects.toThrow(TypeError)
    await expect(tc.notify({ ...ok, url: 'nope' })).rejects.toThrow(TypeError)
    await expect(tc.notify({ ...ok, url: 'ftp://x/y' })).rejects.toThrow(RangeError)
    await expect(tc.notify({ ...ok, reconcile: 'x' })).rejects.toThrow(TypeError)
    await expect(tc.notify({ ...ok, schedule: ['5 sec'] })).rejects.toThrow(RangeError)
    await expect(tc.notify({ ...ok, schedule: [] })).rejects.toThrow(TypeError)
    await expect(tc.notify({ ...ok, body: undefined })).rejects.toThrow(/needs a body/)
    await expect(tc.notify({ ...ok, body: { n: 1n } })).rejects.toThrow(/JSON/)
    await expect(tc.notify({ ...ok, gid: 'a b' })).rejects.toThrow(RangeError)
    await expect(tc.notify({ ...ok, headers: { a: 1 } as never })).rejects.toThrow(TypeError)
    await expect(tc.notify({ ...ok, timeout: 0 })).rejects.toThrow(RangeError)
    expect(await tc.list({ kind: 'notify', limit: 100 })).not.toContainEqual(expect.objectContaining({ gid: 'a b' }))
  })
})
