import {
  Counter,
  Gauge,
  Histogram,
  type OpenMetricsContentType,
  type PrometheusContentType,
  Registry,
} from 'prom-client'
import type { LockEvent, LockEventHandler } from '../core/events.js'
import { checkBoolean, checkOptions } from '../core/validate.js'
import { checkBuckets, DEFAULT_BUCKETS_SECONDS } from '../observe/check-buckets.js'
import { COUNTED_EVENTS } from '../observe/counted-events.js'
import { HeldLeases } from '../observe/held-leases.js'

/** A prom-client registry of either exposition format. */
export type PrometheusRegistry = Registry<PrometheusContentType> | Registry<OpenMetricsContentType>

/** Options of {@link prometheusMetrics}. */
export interface PrometheusMetricsOptions<R extends PrometheusRegistry = Registry> {
  /** Where the metrics are registered. Default: a new `Registry` (serve it, or `Registry.merge` it with yours). */
  registry?: R
  /** Put before every metric name. Default `'latchkey_'`. */
  prefix?: string
  /** Boundaries of the wait and hold histograms, in seconds. Default 1 ms ... 60 s (15 buckets). */
  buckets?: readonly number[]
  /**
   * Add a `name` label (the lock name) to every metric. Default false. Each distinct lock name becomes a time
   * series of every metric: only for a small, fixed set of names, never for names built from ids (per user,
   * per order, per item), which would grow Prometheus's memory without bound.
   */
  nameLabel?: boolean
}

/** What {@link prometheusMetrics} returns. */
export interface PrometheusMetrics<R extends PrometheusRegistry = Registry> {
  /** Pass as `createLocks({ onEvent })` (or through `combineEventHandlers`). */
  readonly onEvent: LockEventHandler
  /** The registry holding the metrics. */
  readonly registry: R
}

const PREFIX = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/

/** Metric names without the prefix. */
const NAMES = [
  'acquire_wait_seconds',
  'hold_seconds',
  'acquisitions_total',
  ...Object.values(COUNTED_EVENTS).map((c) => `${c.name}_total`),
  'held_leases',
  'other_events_total',
]

/**
 * Prometheus metrics of latchkey locks, fed by `createLocks({ onEvent })`, every one labelled by lock `kind`
 * and `backend` (and `name` with `nameLabel: true`):
 * - `latchkey_acquire_wait_seconds` (histogram): from asking for a lock to holding it (reentrant ones excluded);
 * - `latchkey_hold_seconds` (histogram): from acquisition to release;
 * - `latchkey_acquisitions_total{reentrant}`, `latchkey_timeouts_total`, `latchkey_losses_total`,
 *   `latchkey_renewals_total`, `latchkey_renewal_failures_total`, `latchkey_release_failures_total`,
 *   `latchkey_backend_errors_total` (counters; a release failure that `Locks.close()` reports again counts once);
 * - `latchkey_held_leases` (gauge): leases held now by this process;
 * - `latchkey_other_events_total{type}`: events this version does not know (from a newer core).
 *
 * Nothing runs until an event arrives: no timer, no default metrics. Share one instance between several
 * `Locks` of a process; a second instance needs its own registry or prefix.
 *
 * @example
 * import { prometheusMetrics } from 'latchkey/prometheus'
 * const metrics = prometheusMetrics()
 * const locks = createLocks({ backend, onEvent: metrics.onEvent })
 * app.get('/metrics', async () => metrics.registry.metrics())
 */
export function prometheusMetrics<R extends PrometheusRegistry = Registry>(
  options?: PrometheusMetricsOptions<R>,
): PrometheusMetrics<R> {
  const o = checkOptions('prometheusMetrics options', options)
  const prefix = o.prefix === undefined ? 'latchkey_' : checkPrefix(o.prefix)
  const buckets = [...(o.buckets === undefined ? DEFAULT_BUCKETS_SECONDS : checkBuckets('buckets', o.buckets))]
  const nameLabel = o.nameLabel === undefined ? false : checkBoolean('nameLabel', o.nameLabel)
  const registry = (o.registry === undefined ? new Registry() : checkRegistry(o.registry)) as R
  for (const name of NAMES) {
    if (registry.getSingleMetric(prefix + name) !== undefined) {
      throw new RangeError(
        `latchkey: registry already has a metric named "${prefix}${name}": pass another prefix (received ` +
          `${JSON.stringify(prefix)}) or registry, or share one prometheusMetrics() between your Locks`,
      )
    }
  }
  const base = nameLabel ? (['kind', 'backend', 'name'] as const) : (['kind', 'backend'] as const)
  type Label = (typeof base)[number] | 'reentrant' | 'type'
  const registers = [registry]
  const counter = (name: string, help: string, extra: readonly Label[] = []) =>
    new Counter<Label>({ name: prefix + name, help, labelNames: [...base, ...extra], registers })
  const histogram = (name: string, help: string) =>
    new Histogram<Label>({ name: prefix + name, help, labelNames: [...base], buckets, registers })

  const wait = histogram('acquire_wait_seconds', 'Time from asking for a lock to holding it (not reentrant)')
  const hold = histogram('hold_seconds', 'Time a lease was held, from acquisition to release')
  const acquisitions = counter('acquisitions_total', 'Leases acquired', ['reentrant'])
  const counters = new Map(
    Object.entries(COUNTED_EVENTS).map(([type, c]) => [type, counter(`${c.name}_total`, c.help)]),
  )
  const other = counter('other_events_total', 'Lock events of a type this version does not know', ['type'])
  const held = new Gauge<Label>({
    name: `${prefix}held_leases`,
    help: 'Leases held now by this process (reentrant acquisitions share one)',
    labelNames: [...base],
    registers,
  })
  const leases = new HeldLeases()

  const onEvent = (event: LockEvent): void => {
    const change = leases.update(event)
    if (change === 'repeat') return
    const labels: Partial<Record<Label, string>> = { kind: event.kind, backend: event.backend }
    if (nameLabel) labels.name = event.name
    if (event.type === 'acquired') {
      acquisitions.inc({ ...labels, reentrant: String(event.reentrant) })
      if (!event.reentrant) wait.observe(labels, event.waitedMs / 1000)
    } else if (event.type === 'released') {
      hold.observe(labels, event.heldMs / 1000)
    } else {
      const counted = counters.get(event.type)
      // A newer core may add event types: count them rather than fail.
      if (counted === undefined) other.inc({ ...labels, type: String(event.type) })
      else counted.inc(labels)
    }
    if (change !== 0) held.inc(labels, change)
  }
  return { onEvent, registry }
}

function checkPrefix(value: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`latchkey: prefix must be a string, received ${typeof value}`)
  if (value !== '' && !PREFIX.test(value)) {
    throw new RangeError(
      `latchkey: prefix must be empty or match ${PREFIX} (a Prometheus metric name), received ${JSON.stringify(value)}`,
    )
  }
  return value
}

function checkRegistry(value: unknown): PrometheusRegistry {
  const r = value as Partial<Registry> | null
  if (typeof r?.registerMetric !== 'function' || typeof r.getSingleMetric !== 'function') {
    throw new TypeError(`latchkey: registry must be a prom-client Registry, received ${describe(value)}`)
  }
  return value as PrometheusRegistry
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  return typeof value === 'object' ? (Array.isArray(value) ? 'an array' : 'an object') : typeof value
}
