/**
 * latchkey/prometheus against real locks (memory, SQLite, Redis): the values it exports after acquisitions,
 * releases, timeouts and lost leases, the held-leases gauge through every way a lease ends, and its options.
 */
import { once } from 'node:events'
import { Registry } from 'prom-client'
import { afterEach, describe, expect, it } from 'vitest'
import { memoryBackend } from '../src/backends/memory/index.js'
import type { LockEvent } from '../src/core/events.js'
import { createLocks } from '../src/core/locks.js'
import { BackendUnavailableError, LockTimeoutError } from '../src/errors.js'
import { combineEventHandlers } from '../src/observe/combine-event-handlers.js'
import { prometheusMetrics } from '../src/prometheus/index.js'
import { flakyBackend } from './support/flaky-backend.js'
import { closeObservedLocks, observedBackends, observedLocks } from './support/observed-locks.js'

afterEach(closeObservedLocks)

/** The value of the sample `name` (with `_bucket`/`_sum`/`_count` for histograms) whose labels include `labels`. */
async function sample(registry: Registry, name: string, labels: Record<string, string>): Promise<number | undefined> {
  for (const metric of await registry.getMetricsAsJSON()) {
    for (const value of metric.values) {
      const sampleName = (value as { metricName?: string }).metricName ?? metric.name
      const matches = Object.entries(labels).every(([k, v]) => String(value.labels[k]) === v)
      if (sampleName === name && matches && !('le' in value.labels && !('le' in labels))) return value.value
    }
  }
  return undefined
}

/** Every label name used by any sample. */
async function labelNames(registry: Registry): Promise<Set<string>> {
  const names = new Set<string>()
  for (const metric of await registry.getMetricsAsJSON()) {
    for (const value of metric.values) for (const key of Object.keys(value.labels)) names.add(key)
  }
  return names
}

function recorder() {
  const events: LockEvent[] = []
  const metrics = prometheusMetrics()
  return { events, metrics, onEvent: combineEventHandlers(metrics.onEvent, (e) => events.push(e)) }
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)

describe.each(observedBackends)('latchkey/prometheus on $name', (kind) => {
  const mutex = { kind: 'mutex', backend: kind.name }

  it('acquire and release: wait and hold histograms, acquisitions_total, held_leases 1 then 0', async () => {
    const { events, metrics, onEvent } = recorder()
    const locks = observedLocks(kind, onEvent)
    const first = await locks.mutex('a').acquire()
    expect(await sample(metrics.registry, 'latchkey_held_leases', mutex)).toBe(1)
    const second = locks.mutex('a').acquire({ waitMs: 10_000 })
    await first.release()
    await (await second).release()

    const waited = events.flatMap((e) => (e.type === 'acquired' ? [e.waitedMs / 1000] : []))
    const heldFor = events.flatMap((e) => (e.type === 'released' ? [e.heldMs / 1000] : []))
    expect(waited).toHaveLength(2)
    expect(await sample(metrics.registry, 'latchkey_acquisitions_total', { ...mutex, reentrant: 'false' })).toBe(2)
    expect(await sample(metrics.registry, 'latchkey_acquire_wait_seconds_count', mutex)).toBe(2)
    expect(await sample(metrics.registry, 'latchkey_acquire_wait_seconds_sum', mutex)).toBeCloseTo(sum(waited), 9)
    expect(await sample(metrics.registry, 'latchkey_hold_seconds_count', mutex)).toBe(2)
    expect(await sample(metrics.registry, 'latchkey_hold_seconds_sum', mutex)).toBeCloseTo(sum(heldFor), 9)
    expect(await sample(metrics.registry, 'latchkey_held_leases', mutex)).toBe(0)
  })

  it('a timeout counts in timeouts_total and not in the wait histogram', async () => {
    const { metrics, onEvent } = recorder()
    const locks = observedLocks(kind, onEvent)
    const lease = await locks.mutex('b').acquire()
    await expect(locks.mutex('b').acquire({ waitMs: 30 })).rejects.toBeInstanceOf(LockTimeoutError)
    expect(await sample(metrics.registry, 'latchkey_timeouts_total', mutex)).toBe(1)
    expect(await sample(metrics.registry, 'latchkey_acquire_wait_seconds_count', mutex)).toBe(1)
    expect(await sample(metrics.registry, 'latchkey_held_leases', mutex)).toBe(1)
    await lease.release()
    expect(await sample(metrics.registry, 'latchkey_held_leases', mutex)).toBe(0)
  })

  it('a lost lease counts in losses_total and leaves held_leases at 0, even once its holder releases it', async () => {
    const { events, metrics, onEvent } = recorder()
    const locks = observedLocks(kind, onEvent)
    const lease = await locks.mutex('c').acquire({ ttlMs: 80, autoRenew: false })
    await once(lease.signal, 'abort')
    expect(await sample(metrics.registry, 'latchkey_losses_total', mutex)).toBe(1)
    expect(await sample(metrics.registry, 'latchkey_held_leases', mutex)).toBe(0)
    // The late release reports `released` or `release-failed` (whether the server still had it): no second -1.
    await lease.release().catch(() => undefined)
    expect(events.map((e) => e.type).slice(-1)[0]).toMatch(/^release(d|-failed)$/)
    expect(await sample(metrics.registry, 'latchkey_held_leases', mutex)).toBe(0)
    const again = await locks.mutex('c').acquire()
    expect(await sample(metrics.registry, 'latchkey_held_leases', mutex)).toBe(1)
    await again.release()
    expect(await sample(metrics.registry, 'latchkey_held_leases', mutex)).toBe(0)
  })

  it('renewals: the watchdog and extend() count in renewals_total', async () => {
    const { events, metrics, onEvent } = recorder()
    const locks = observedLocks(kind, onEvent)
    const lease = await locks.mutex('d').acquire({ ttlMs: 60_000 })
    await lease.extend()
    await lease.extend()
    await lease.release()
    const renewed = events.filter((e) => e.type === 'renewed').length
    expect(renewed).toBeGreaterThanOrEqual(2)
    expect(await sample(metrics.registry, 'latchkey_renewals_total', mutex)).toBe(renewed)
  })
})

describe('latchkey/prometheus', () => {
  const memory = observedBackends[0] as (typeof observedBackends)[number]

  it('reentrant acquisitions: reentrant="true" in acquisitions_total, no wait sample, one held lease', async () => {
    const { metrics, onEvent } = recorder()
    const locks = observedLocks(memory, onEvent)
    const lock = locks.mutex('r')
    // acquire() inside withLock of the same lock is the reentrant path that reports `acquired`.
    const heldInside = await lock.withLock(async () => {
      const inner = await lock.acquire()
      await inner.release()
      return sample(metrics.registry, 'latchkey_held_leases', { kind: 'mutex' })
    })
    expect(heldInside).toBe(1)
    expect(await sample(metrics.registry, 'latchkey_acquisitions_total', { reentrant: 'true' })).toBe(1)
    expect(await sample(metrics.registry, 'latchkey_acquisitions_total', { reentrant: 'false' })).toBe(1)
    expect(await sample(metrics.registry, 'latchkey_acquire_wait_seconds_count', { kind: 'mutex' })).toBe(1)
    expect(await sample(metrics.registry, 'latchkey_held_leases', { kind: 'mutex' })).toBe(0)
  })

  it('held_leases counts each holder of shared kinds, by kind', async () => {
    const { metrics, onEvent } = recorder()
    const locks = observedLocks(memory, onEvent)
    const sem = locks.semaphore('s', { permits: 3 })
    const rw = locks.readWrite('rw')
    const leases = [await sem.acquire(), await sem.acquire(), await rw.read.acquire(), await rw.read.acquire()]
    leases.push(await locks.mutex('m').acquire())
    expect(await sample(metrics.registry, 'latchkey_held_leases', { kind: 'semaphore' })).toBe(2)
    expect(await sample(metrics.registry, 'latchkey_held_leases', { kind: 'read' })).toBe(2)
    expect(await sample(metrics.registry, 'latchkey_held_leases', { kind: 'mutex' })).toBe(1)
    for (const lease of leases) await lease.release()
    for (const k of ['semaphore', 'read', 'mutex']) {
      expect(await sample(metrics.registry, 'latchkey_held_leases', { kind: k })).toBe(0)
    }
  })

  it('a release failure that Locks.close() reports again counts once, and held_leases ends at 0', async () => {
    const { events, metrics, onEvent } = recorder()
    const { backend, state } = flakyBackend(memoryBackend())
    const locks = createLocks({ backend, onEvent })
    await locks.mutex('f').acquire()
    state.down = true
    await locks.close()
    await backend.close()
    expect(events.filter((e) => e.type === 'release-failed').length).toBeGreaterThanOrEqual(1)
    expect(await sample(metrics.registry, 'latchkey_release_failures_total', { backend: 'flaky' })).toBe(1)
    expect(await sample(metrics.registry, 'latchkey_held_leases', { backend: 'flaky' })).toBe(0)
  })

  it('backend errors while acquiring count in backend_errors_total', async () => {
    const { metrics, onEvent } = recorder()
    const { backend, state } = flakyBackend(memoryBackend())
    const locks = createLocks({ backend, onEvent })
    state.down = true
    // The backend, not a holder, ended the wait: BackendUnavailableError, counted as backend errors, no timeout.
    await expect(locks.mutex('e').acquire({ waitMs: 60 })).rejects.toBeInstanceOf(BackendUnavailableError)
    await locks.close()
    await backend.close()
    expect(await sample(metrics.registry, 'latchkey_backend_errors_total', { backend: 'flaky' })).toBeGreaterThan(0)
    expect((await sample(metrics.registry, 'latchkey_timeouts_total', { backend: 'flaky' })) ?? 0).toBe(0)
  })

  it('no lock name label unless nameLabel: true', async () => {
    const plain = prometheusMetrics()
    const named = prometheusMetrics({ nameLabel: true })
    const locks = observedLocks(memory, combineEventHandlers(plain.onEvent, named.onEvent))
    await (await locks.mutex('order-42').acquire()).release()
    expect([...(await labelNames(plain.registry))].sort()).toEqual(['backend', 'kind', 'le', 'reentrant'])
    expect(await sample(named.registry, 'latchkey_hold_seconds_count', { name: 'order-42' })).toBe(1)
  })

  it('unknown event types count in other_events_total and never throw', async () => {
    const { metrics } = recorder()
    const event = { type: 'demoted', name: 'a', kind: 'mutex', backend: 'memory' } as unknown as LockEvent
    metrics.onEvent(event)
    expect(await sample(metrics.registry, 'latchkey_other_events_total', { type: 'demoted' })).toBe(1)
  })

  it('costs nothing until an event: no timer, no handle, no sample', async () => {
    const before = process.getActiveResourcesInfo()
    const metrics = prometheusMetrics()
    expect(process.getActiveResourcesInfo()).toEqual(before)
    const samples = (await metrics.registry.getMetricsAsJSON()).flatMap((m) => m.values)
    expect(samples).toEqual([])
  })

  it('registers in the registry and with the prefix given; a second set on the same names is refused', async () => {
    const registry = new Registry()
    const metrics = prometheusMetrics({ registry, prefix: 'app_locks_', buckets: [0.5, 1] })
    expect(metrics.registry).toBe(registry)
    metrics.onEvent({
      type: 'acquired',
      name: 'a',
      kind: 'fair',
      backend: 'x',
      token: 1n,
      waitedMs: 700,
      reentrant: false,
    })
    expect(await sample(registry, 'app_locks_acquire_wait_seconds_bucket', { le: '0.5' })).toBe(0)
    expect(await sample(registry, 'app_locks_acquire_wait_seconds_bucket', { le: '1' })).toBe(1)
    expect(() => prometheusMetrics({ registry, prefix: 'app_locks_' })).toThrow(
      /registry already has a metric named "app_locks_acquire_wait_seconds"/,
    )
    expect(() => prometheusMetrics({ registry })).not.toThrow()
  })

  it('bad options: TypeError or RangeError naming the option and the value', () => {
    const cases: Array<[unknown, ErrorConstructor, RegExp]> = [
      ['x', TypeError, /prometheusMetrics options must be an object, received "x"/],
      [{ prefix: 1 }, TypeError, /prefix must be a string, received number/],
      [{ prefix: 'my-app' }, RangeError, /prefix must be empty or match .* received "my-app"/],
      [{ buckets: 'x' }, TypeError, /buckets must be an array of seconds, received "x"/],
      [{ buckets: [] }, RangeError, /buckets must not be empty/],
      [{ buckets: [1, Number.NaN] }, RangeError, /buckets\[1\] must be a finite number >= 0, received NaN/],
      [{ buckets: [2, 1] }, RangeError, /buckets must increase, received 2 then 1 at \[1\]/],
      [{ nameLabel: 'yes' }, TypeError, /nameLabel must be a boolean, received "yes"/],
      [{ registry: {} }, TypeError, /registry must be a prom-client Registry, received an object/],
    ]
    for (const [options, type, message] of cases) {
      expect(() => prometheusMetrics(options as never), JSON.stringify(options)).toThrow(type)
      expect(() => prometheusMetrics(options as never), JSON.stringify(options)).toThrow(message)
    }
  })
})
