/**
 * latchkey/opentelemetry against real locks (memory, SQLite, Redis) and the real OpenTelemetry SDK: the spans
 * it records per acquisition, timeout and backend error, and the metrics it records through the OTel API.
 */
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { type Attributes, context, SpanStatusCode, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { type Histogram, MeterProvider } from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { memoryBackend } from '../src/backends/memory/index.js'
import type { LockEvent } from '../src/core/events.js'
import { createLocks } from '../src/core/locks.js'
import { BackendUnavailableError, LockTimeoutError } from '../src/errors.js'
import { combineEventHandlers } from '../src/observe/combine-event-handlers.js'
import { ACQUIRE_SPAN, BACKEND_ERROR_SPAN, openTelemetryInstrumentation } from '../src/opentelemetry/index.js'
import { flakyBackend } from './support/flaky-backend.js'
import { closeObservedLocks, observedBackends, observedLocks } from './support/observed-locks.js'
import { countingTries, eventually, sdk, TestReader } from './support/otel-sdk.js'

const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
const contextManager = new AsyncLocalStorageContextManager()
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable())
})
afterAll(() => {
  context.disable()
})
afterEach(closeObservedLocks)

const ms = ([s, ns]: [number, number]) => s * 1000 + ns / 1e6
const nowMs = () => performance.timeOrigin + performance.now()

const spanMs = (span: ReadableSpan) => ms(span.endTime) - ms(span.startTime)

describe.each(observedBackends)('latchkey/opentelemetry on $name', (kind) => {
  const lock = { 'latchkey.lock.kind': 'mutex', 'latchkey.backend': kind.name }

  it('a span per acquisition, from asking to holding, child of the caller span, with kind, backend, token and wait', async () => {
    const otel = sdk()
    const locks = observedLocks(kind, otel.onEvent)
    const outer = otel.tracerProvider.getTracer('test').startSpan('request')
    const lease = await context.with(trace.setSpan(context.active(), outer), () => locks.mutex('a').acquire())
    outer.end()
    await lease.release()

    const acquired = otel.events.find((e) => e.type === 'acquired')
    const [span] = otel.spans().filter((s) => s.name === ACQUIRE_SPAN)
    expect(span?.attributes).toEqual({
      ...lock,
      'latchkey.lock.name': 'a',
      'latchkey.lock.token': lease.token.toString(),
      'latchkey.wait_ms': acquired?.type === 'acquired' ? acquired.waitedMs : Number.NaN,
      'latchkey.reentrant': false,
    })
    expect(span && spanMs(span)).toBeCloseTo(acquired?.type === 'acquired' ? acquired.waitedMs : Number.NaN, 2)
    expect(span?.status.code).toBe(SpanStatusCode.UNSET)
    expect(span?.parentSpanContext?.spanId).toBe(outer.spanContext().spanId)
    expect(span?.instrumentationScope).toMatchObject({ name: 'latchkey', version: packageJson.version })
  })

  it('a timeout: an acquire span with status error and error.type timeout', async () => {
    const otel = sdk()
    const locks = observedLocks(kind, otel.onEvent)
    const lease = await locks.mutex('b').acquire()
    await expect(locks.mutex('b').acquire({ waitMs: 40 })).rejects.toBeInstanceOf(LockTimeoutError)
    await lease.release()
    const failed = otel.spans().filter((s) => s.status.code === SpanStatusCode.ERROR)
    expect(failed).toHaveLength(1)
    expect(failed[0]?.name).toBe(ACQUIRE_SPAN)
    expect(failed[0]?.attributes).toMatchObject({ ...lock, 'error.type': 'timeout' })
    expect(spanMs(failed[0] as ReadableSpan)).toBeGreaterThanOrEqual(39)
  })

  it('metrics: wait and hold histograms, acquisitions, timeouts, losses, and held leases back to 0', async () => {
    const otel = sdk()
    const locks = observedLocks(kind, otel.onEvent)
    const first = await locks.mutex('c').acquire()
    expect(await otel.points('latchkey.lock.held', lock)).toEqual([1])
    await expect(locks.mutex('c').acquire({ waitMs: 20 })).rejects.toBeInstanceOf(LockTimeoutError)
    await first.release()
    const lost = await locks.mutex('c').acquire({ ttlMs: 80, autoRenew: false })
    await once(lost.signal, 'abort')
    await lost.release().catch(() => undefined)

    const waited = otel.events.flatMap((e) => (e.type === 'acquired' ? [e.waitedMs / 1000] : []))
    const [wait] = (await otel.points('latchkey.lock.wait.duration', lock)) as Histogram[]
    expect(wait?.count).toBe(2)
    expect(wait?.sum).toBeCloseTo(
      waited.reduce((a, b) => a + b, 0),
      9,
    )
    expect(((await otel.points('latchkey.lock.hold.duration', lock)) as Histogram[])[0]?.count).toBe(
      otel.events.filter((e) => e.type === 'released').length,
    )
    expect(await otel.points('latchkey.lock.acquisitions', { ...lock, 'latchkey.reentrant': false })).toEqual([2])
    expect(await otel.points('latchkey.lock.timeouts', lock)).toEqual([1])
    expect(await otel.points('latchkey.lock.losses', lock)).toEqual([1])
    expect(await otel.points('latchkey.lock.held', lock)).toEqual([0])
  })
})

describe('latchkey/opentelemetry', () => {
  const memory = observedBackends[0] as (typeof observedBackends)[number]

  it('a waiter: its span starts when it asked and ends once the holder released', async () => {
    const otel = sdk()
    const { backend, tries } = countingTries(memoryBackend())
    const locks = createLocks({ backend, onEvent: otel.onEvent })
    const holder = await locks.mutex('w').acquire()
    const askedAt = nowMs()
    const waiter = locks.mutex('w').acquire({ waitMs: 10_000 })
    // Release only once the waiter has been refused at least once, so it really waited.
    await eventually(() => tries() >= 2)
    const releasedAt = nowMs()
    await holder.release()
    await (await waiter).release()
    await locks.close()
    await backend.close()
    const span = otel.spans().filter((s) => s.name === ACQUIRE_SPAN)[1] as ReadableSpan
    expect(Math.abs(ms(span.startTime) - askedAt)).toBeLessThan(5)
    expect(ms(span.endTime)).toBeGreaterThanOrEqual(releasedAt)
  })

  it('a backend error while acquiring: a latchkey.backend_error span with the exception, status error', async () => {
    const otel = sdk()
    const { backend, state } = flakyBackend(memoryBackend())
    const locks = createLocks({ backend, onEvent: otel.onEvent })
    state.down = true
    await expect(locks.mutex('e').acquire({ waitMs: 60 })).rejects.toBeInstanceOf(BackendUnavailableError)
    await locks.close()
    await backend.close()
    const errors = otel.spans().filter((s) => s.name === BACKEND_ERROR_SPAN)
    expect(errors.length).toBeGreaterThan(0)
    expect(errors[0]?.status).toMatchObject({ code: SpanStatusCode.ERROR, message: expect.stringContaining('down') })
    expect(errors[0]?.attributes).toMatchObject({ 'latchkey.backend': 'flaky', 'error.type': 'BACKEND_UNAVAILABLE' })
    expect(errors[0]?.events.map((e) => e.name)).toEqual(['exception'])
    expect(await otel.points('latchkey.lock.backend_errors', { 'latchkey.backend': 'flaky' })).toEqual([errors.length])
  })

  it('the wait histogram uses the given buckets; nameAttribute adds the lock name to metrics', async () => {
    const reader = new TestReader()
    const meterProvider = new MeterProvider({ readers: [reader] })
    const otel = openTelemetryInstrumentation({ meterProvider, spans: false, buckets: [0.5, 1], nameAttribute: true })
    const locks = observedLocks(memory, otel.onEvent)
    await (await locks.mutex('n').acquire()).release()
    const { resourceMetrics } = await reader.collect()
    const wait = resourceMetrics.scopeMetrics[0]?.metrics.find(
      (m) => m.descriptor.name === 'latchkey.lock.wait.duration',
    )
    expect(wait?.descriptor.unit).toBe('s')
    expect((wait?.dataPoints[0]?.value as Histogram | undefined)?.buckets.boundaries).toEqual([0.5, 1])
    expect(wait?.dataPoints[0]?.attributes['latchkey.lock.name']).toBe('n')
  })

  it('no lock name in metric attributes by default; spans: false and metrics: false turn each off', async () => {
    const exporter = new InMemorySpanExporter()
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    const reader = new TestReader()
    const meterProvider = new MeterProvider({ readers: [reader] })
    const noSpans = openTelemetryInstrumentation({ tracerProvider, meterProvider, spans: false })
    const noMetrics = openTelemetryInstrumentation({ tracerProvider, meterProvider, metrics: false })
    const locks = observedLocks(memory, combineEventHandlers(noSpans.onEvent, noMetrics.onEvent))
    await (await locks.mutex('x').acquire()).release()
    expect(exporter.getFinishedSpans()).toHaveLength(1)
    const { resourceMetrics } = await reader.collect()
    const points = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .flatMap((m) => m.dataPoints as Array<{ attributes: Attributes }>)
    expect(points.length).toBeGreaterThan(0)
    expect(points.filter((p) => 'latchkey.lock.name' in p.attributes)).toEqual([])
  })

  it('uses the global providers when none is given', async () => {
    const exporter = new InMemorySpanExporter()
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
    try {
      const locks = observedLocks(memory, openTelemetryInstrumentation({ metrics: false }).onEvent)
      await (await locks.mutex('g').acquire()).release()
      expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([ACQUIRE_SPAN])
    } finally {
      trace.disable()
    }
  })

  it('without an SDK: no-op tracer and meter, no timer or handle, nothing thrown', async () => {
    const before = process.getActiveResourcesInfo()
    const otel = openTelemetryInstrumentation()
    const warnings: unknown[] = []
    const onWarning = (w: unknown) => warnings.push(w)
    process.on('warning', onWarning)
    try {
      const locks = observedLocks(memory, otel.onEvent)
      await (await locks.mutex('z').acquire()).release()
      await locks.close()
    } finally {
      process.off('warning', onWarning)
    }
    expect(warnings).toEqual([])
    expect(process.getActiveResourcesInfo()).toEqual(before)
  })

  it('unknown event types count in latchkey.lock.other_events and never throw', async () => {
    const otel = sdk()
    otel.onEvent({ type: 'demoted', name: 'a', kind: 'mutex', backend: 'memory' } as unknown as LockEvent)
    expect(await otel.points('latchkey.lock.other_events', { 'latchkey.event.type': 'demoted' })).toEqual([1])
  })

  it('bad options: TypeError or RangeError naming the option and the value', () => {
    const cases: Array<[unknown, ErrorConstructor, RegExp]> = [
      [42, TypeError, /openTelemetryInstrumentation options must be an object, received 42/],
      [{ tracerProvider: {} }, TypeError, /tracerProvider must be an OpenTelemetry TracerProvider .* received object/],
      [{ meterProvider: null }, TypeError, /meterProvider must be an OpenTelemetry MeterProvider .* received null/],
      [{ spans: 1 }, TypeError, /spans must be a boolean, received 1/],
      [{ metrics: 'no' }, TypeError, /metrics must be a boolean, received "no"/],
      [{ buckets: [0, 0] }, RangeError, /buckets must increase, received 0 then 0 at \[1\]/],
      [{ nameAttribute: 0 }, TypeError, /nameAttribute must be a boolean, received 0/],
    ]
    for (const [options, type, message] of cases) {
      expect(() => openTelemetryInstrumentation(options as never), JSON.stringify(options)).toThrow(type)
      expect(() => openTelemetryInstrumentation(options as never), JSON.stringify(options)).toThrow(message)
    }
  })
})
