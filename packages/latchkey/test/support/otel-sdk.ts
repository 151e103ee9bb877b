/**
 * The OpenTelemetry SDK wired for the latchkey/opentelemetry tests: spans kept in memory, metrics collected on
 * demand, a lock-event recorder beside the instrumentation; and a backend wrapper counting tries.
 */
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { expect } from 'vitest'
import type { AcquireRequest, Backend } from '../../src/backend/types.js'
import type { LockEvent } from '../../src/core/events.js'
import { combineEventHandlers } from '../../src/observe/combine-event-handlers.js'
import { openTelemetryInstrumentation } from '../../src/opentelemetry/index.js'

/** A metric reader collected on demand (no export timer). */
export class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** A tracer and a meter provider of the real SDK, and latchkey's instrumentation feeding them. */
export function sdk() {
  const exporter = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const reader = new TestReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  const events: LockEvent[] = []
  const otel = openTelemetryInstrumentation({ tracerProvider, meterProvider })
  return {
    tracerProvider,
    spans: () => exporter.getFinishedSpans(),
    events,
    onEvent: combineEventHandlers(otel.onEvent, (e) => events.push(e)),
    /** The data points of metric `name` whose attributes include `attributes`. */
    async points(name: string, attributes: Record<string, unknown> = {}) {
      const { resourceMetrics, errors } = await reader.collect()
      expect(errors).toEqual([])
      const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)
      const matches = (a: Record<string, unknown>) => Object.entries(attributes).every(([k, v]) => a[k] === v)
      return (metric?.dataPoints ?? []).filter((p) => matches(p.attributes)).map((p) => p.value)
    },
  }
}

/** `inner` with its `tryAcquire` calls counted (every other call passed through as it is). */
export function countingTries(inner: Backend): { backend: Backend; tries: () => number } {
  let tries = 0
  const backend = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (prop === 'tryAcquire') {
        return (request: AcquireRequest) => {
          tries++
          return target.tryAcquire(request)
        }
      }
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return { backend, tries: () => tries }
}

/** Polls `check` every few ms until it holds (the test's timeout bounds it). */
export async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 2))
}
