import { join } from 'node:path'
import { type Backend, createLocks } from 'latchkey'
import { sqliteBackend } from 'latchkey/sqlite'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createCoordinator, StaleCoordinatorError } from '../src/index.js'
import { FAST_RETRY, sqliteHarness } from './support/coordinators.js'
import { tempDir } from './support/databases.js'
import { eventually, latch } from './support/eventually.js'

describe('createCoordinator options', () => {
  it('rejects bad options with TypeError / RangeError before any I/O', () => {
    expect(() => createCoordinator(undefined as never)).toThrow(TypeError)
    expect(() => createCoordinator({ store: 42 as never })).toThrow(/store must be a URL or a TxStore/)
    expect(() => createCoordinator({ store: {} as never })).toThrow(/missing init/)
    expect(() => createCoordinator({ store: 'redis://127.0.0.1' })).toThrow(RangeError)
    const store = 'sqlite:/nonexistent-dir/never-opened.db'
    expect(() => createCoordinator({ store, retry: { attempts: 0 } })).toThrow(/retry.attempts/)
    expect(() => createCoordinator({ store, retry: { firstMs: 500, maxMs: 100 } })).toThrow(/retry.maxMs/)
    expect(() => createCoordinator({ store, retry: { firstMs: Number.NaN } })).toThrow(TypeError)
    expect(() => createCoordinator({ store, timeoutMs: -1 })).toThrow(/timeoutMs/)
    expect(() => createCoordinator({ store, leaseTtlMs: 5 })).toThrow(/leaseTtlMs/)
    expect(() => createCoordinator({ store, recover: 'yes' as never })).toThrow(/recover/)
    expect(() => createCoordinator({ store, onEvent: 1 as never })).toThrow(/onEvent/)
    expect(() => createCoordinator({ store, locks: {} as never })).toThrow(/latchkey Locks/)
    const unfenced = { mutex: () => undefined, backend: { capabilities: { fencing: 'none' } } }
    expect(() => createCoordinator({ store, locks: unfenced as never })).toThrow(/fencing tokens/)
  })
})

describe('fenced recovery leases', () => {
  let h: ReturnType<typeof sqliteHarness>
  const tmp = tempDir()
  beforeEach(() => {
    h = sqliteHarness()
  })
  afterEach(async () => {
    await h.close()
  })
  afterAll(() => {
    tmp.remove()
  })

  it('a coordinator paused past its lease cannot write once another took over (StaleCoordinatorError)', async () => {
    const lockPath = join(tmp.dir, `locks-${Date.now()}.db`)
    const realA = sqliteBackend({ path: lockPath })
    // A's watchdog is told every renewal worked, as a process frozen by GC or SIGSTOP would believe on waking.
    const pausedA = new Proxy(realA, {
      get(target, p) {
        if (p === 'renew') return async () => true
        const v = Reflect.get(target, p, target)
        return typeof v === 'function' ? v.bind(target) : v
      },
    }) as Backend
    const backendB = sqliteBackend({ path: lockPath })
    const locksA = createLocks({ backend: pausedA, namespace: 'fence' })
    const locksB = createLocks({ backend: backendB, namespace: 'fence' })
    const a = h.coordinator({ locks: locksA, leaseTtlMs: 300 })
    const b = h.coordinator({ locks: locksB, leaseTtlMs: 5_000 })
    const inStep = latch()
    const gate = latch()
    const calls: string[] = []
    const sagaA = a
      .saga('fenced')
      .step('one', { action: () => calls.push('A:one') })
      .step('two', {
        action: async () => {
          calls.push('A:two')
          inStep.open()
          await gate.promise
          return 'from A'
        },
      })
    b.saga('fenced')
      .step('one', { action: () => calls.push('B:one') })
      .step('two', { action: () => calls.push('B:two') && 'from B' })
    const runA = sagaA.run({}, { gid: 'fenced-1' })
    await inStep.promise
    // A's real lease expires (nothing renews it); B's sweep takes the transaction with a higher token.
    await eventually(async () => {
      await b.recoverNow()
      return (await b.get('fenced-1'))?.status === 'succeeded'
    })
    gate.open()
    const r = await runA
    expect(r.error).toBeInstanceOf(StaleCoordinatorError)
    expect(r.status).toBe('succeeded')
    const tx = await b.get('fenced-1')
    expect(tx?.branches.find((x) => x.id === 'two' && x.op === 'action')?.result).toBe('from B')
    expect(calls).toEqual(['A:one', 'A:two', 'B:two'])
    const tokens = tx?.history.map((e) => e.token) ?? []
    expect([...tokens].sort((x, y) => (x < y ? -1 : 1))).toEqual(tokens)
    expect(h.events.filter((e) => e.type === 'stale').map((e) => e.gid)).toEqual(['fenced-1'])
    await a.close()
    await b.close()
    await locksA.close()
    await locksB.close()
    await realA.close()
    await backendB.close()
  })

  it('a row lease outlives its TTL while its holder is alive: a branch longer than the lease is not taken over', async () => {
    const a = h.coordinator({ leaseTtlMs: 300 })
    const b = h.coordinator({ leaseTtlMs: 5_000 })
    const calls: string[] = []
    const t0 = Date.now()
    const step = (who: string) => async () => {
      calls.push(who)
      if (who !== 'A') return who
      // Several TTLs pass while B keeps sweeping: A's lease, renewed by its timer, must keep B out.
      await eventually(async () => {
        await b.recoverNow()
        return Date.now() - t0 > 1_500
      }, 10_000)
      return who
    }
    const sagaA = a.saga('long').step('slow', { action: step('A') })
    b.saga('long').step('slow', { action: step('B') })
    const r = await sagaA.run({}, { gid: 'long-1' })
    expect(r.status).toBe('succeeded')
    expect(r.results).toEqual({ slow: 'A' })
    expect(calls).toEqual(['A'])
    expect(h.events.filter((e) => e.type === 'recovered')).toEqual([])
  })

  it('a listener that throws changes nothing', async () => {
    const tc = h.coordinator({
      retry: FAST_RETRY,
      onEvent: () => {
        throw new Error('listener bug')
      },
    })
    const r = await tc
      .saga('quiet')
      .step('a', { action: () => 1 })
      .run({})
    expect(r.status).toBe('succeeded')
  })
})
