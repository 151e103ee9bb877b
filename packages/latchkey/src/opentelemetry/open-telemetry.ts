import { type MeterProvider, metrics, type Tracer, type TracerProvider, trace } from '@opentelemetry/api'
import type { LockEvent, LockEventHandler } from '../core/events.js'
import { checkBoolean, checkOptions } from '../core/validate.js'
import { checkBuckets, DEFAULT_BUCKETS_SECONDS } from '../observe/check-buckets.js'
import { PACKAGE_VERSION } from '../observe/package-version.js'
import { recordSpan } from './acquire-spans.js'
import { LockInstruments } from './lock-instruments.js'

/** Options of {@link openTelemetryInstrumentation}. */
export interface OpenTelemetryOptions {
  /** Where spans go. Default: the global provider (`trace.setGlobalTracerProvider`, or the SDK's `start()`). */
  tracerProvider?: TracerProvider
  /** Where metrics go. Default: the global provider, as it is when the first lock event arrives. */
  meterProvider?: MeterProvider
  /** Record a span per acquisition (and per timeout and backend error). Default true. */
  spans?: boolean
  /** Record the metrics. Default true. */
  metrics?: boolean
  /** Bucket advice for the wait and hold histograms, in seconds. Default 1 ms ... 60 s (15 buckets). */
  buckets?: readonly number[]
  /**
   * Add `latchkey.lock.name` to the metrics' attributes. Default false: each distinct name becomes a time
   * series of every metric, so only for a small, fixed set of names (never names built from ids). Spans always
   * carry the name.
   */
  nameAttribute?: boolean
}

/** What {@link openTelemetryInstrumentation} returns. */
export interface OpenTelemetryInstrumentation {
  /** Pass as `createLocks({ onEvent })` (or through `combineEventHandlers`). */
  readonly onEvent: LockEventHandler
}

/**
 * OpenTelemetry traces and metrics of latchkey locks through `@opentelemetry/api` (an optional peer
 * dependency), fed by `createLocks({ onEvent })`. The tracer and meter are named `latchkey` with the package
 * version.
 *
 * Spans: `latchkey.acquire` per acquisition, a child of the span active in the caller of `acquire()`, starting
 * when the lock was asked for (`waitedMs` before it was held) and ending when it was held, with
 * `latchkey.lock.name`, `latchkey.lock.kind`, `latchkey.backend`, `latchkey.lock.token` (a decimal string),
 * `latchkey.wait_ms` and `latchkey.reentrant`; the same with status error and `error.type: timeout` when the
 * wait ran out; `latchkey.backend_error` (status error, the exception recorded) per backend error met while
 * acquiring.
 *
 * Metrics (attributes `latchkey.lock.kind`, `latchkey.backend`): histograms `latchkey.lock.wait.duration` and
 * `latchkey.lock.hold.duration` (seconds); counters `latchkey.lock.acquisitions` (plus `latchkey.reentrant`),
 * `.timeouts`, `.losses`, `.renewals`, `.renewal_failures`, `.release_failures` (once per lease), `.backend_errors`,
 * `latchkey.lock.other_events` (event types this version does not know); up-down counter `latchkey.lock.held`
 * (leases held now).
 *
 * Nothing is created before the first event, and with no SDK installed the API's no-op tracer and meter make
 * every call a no-op. Create it once the SDK is started: a meter taken from the no-op global stays a no-op.
 *
 * @example
 * import { openTelemetryInstrumentation } from 'latchkey/opentelemetry'
 * const otel = openTelemetryInstrumentation()
 * const locks = createLocks({ backend, onEvent: otel.onEvent })
 */
export function openTelemetryInstrumentation(options?: OpenTelemetryOptions): OpenTelemetryInstrumentation {
  const o = checkOptions('openTelemetryInstrumentation options', options)
  const tracerProvider = o.tracerProvider === undefined ? undefined : checkProvider<TracerProvider>(o, 'tracerProvider')
  const meterProvider = o.meterProvider === undefined ? undefined : checkProvider<MeterProvider>(o, 'meterProvider')
  const spans = o.spans === undefined ? true : checkBoolean('spans', o.spans)
  const withMetrics = o.metrics === undefined ? true : checkBoolean('metrics', o.metrics)
  const buckets = o.buckets === undefined ? DEFAULT_BUCKETS_SECONDS : checkBuckets('buckets', o.buckets)
  const nameAttribute = o.nameAttribute === undefined ? false : checkBoolean('nameAttribute', o.nameAttribute)

  let tracer: Tracer | undefined
  let instruments: LockInstruments | undefined
  const onEvent = (event: LockEvent): void => {
    if (spans) {
      tracer ??= (tracerProvider ?? trace.getTracerProvider()).getTracer('latchkey', PACKAGE_VERSION)
      recordSpan(tracer, event)
    }
    if (withMetrics) {
      instruments ??= new LockInstruments(
        (meterProvider ?? metrics.getMeterProvider()).getMeter('latchkey', PACKAGE_VERSION),
        buckets,
        nameAttribute,
      )
      instruments.record(event)
    }
  }
  return { onEvent }
}

function checkProvider<P>(o: Record<string, unknown>, option: 'tracerProvider' | 'meterProvider'): P {
  const value = o[option]
  const [type, method] = option === 'tracerProvider' ? ['TracerProvider', 'getTracer'] : ['MeterProvider', 'getMeter']
  if (typeof value !== 'object' || value === null || typeof (value as Record<string, unknown>)[method] !== 'function') {
    const received = value === null ? 'null' : typeof value
    throw new TypeError(`latchkey: ${option} must be an OpenTelemetry ${type} (with ${method}()), received ${received}`)
  }
  return value as P
}
