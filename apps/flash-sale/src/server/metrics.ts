import type { LockEventHandler } from 'latchkey'
import { prometheusMetrics } from 'latchkey/prometheus'
import { Counter, Histogram, Registry } from 'prom-client'
import { LiveStats } from './live-stats.js'

/** Why an order was refused (the `reason` label of `flash_sale_rejections_total`). */
export type RejectReason =
  | 'sold_out'
  | 'duplicate'
  | 'not_started'
  | 'invalid'
  | 'unknown_sale'
  | 'unavailable'
  | 'payment_declined'

/** The service's Prometheus metrics, in a registry of its own (several services may share a process). */
export interface ServiceMetrics {
  readonly registry: Registry
  /** The same answers as rolling per-strategy figures, for the dashboard. */
  readonly live: LiveStats
  order(strategy: string, seconds: number): void
  reject(strategy: string, reason: RejectReason, seconds: number): void
  /** Feed for `createLocks({ onEvent })`: latchkey/prometheus's lock metrics, in the same registry. */
  readonly onLockEvent: LockEventHandler
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/**
 * Creates the metrics: `flash_sale_orders_total`, `flash_sale_rejections_total`,
 * `flash_sale_order_duration_seconds`, and latchkey/prometheus's lock metrics (`latchkey_acquire_wait_seconds`,
 * `latchkey_hold_seconds`, `latchkey_held_leases`, `latchkey_acquisitions_total`, `latchkey_timeouts_total`,
 * `latchkey_losses_total`, ... by lock kind and backend; never by lock name, which holds the sale id).
 *
 * @example
 * const metrics = createMetrics()
 * const locks = createLocks({ backend, onEvent: metrics.onLockEvent })
 */
export function createMetrics(): ServiceMetrics {
  const registry = new Registry()
  const orders = new Counter({
    name: 'flash_sale_orders_total',
    help: 'Orders accepted',
    labelNames: ['strategy'],
    registers: [registry],
  })
  const rejections = new Counter({
    name: 'flash_sale_rejections_total',
    help: 'Orders refused, by reason',
    labelNames: ['strategy', 'reason'],
    registers: [registry],
  })
  const duration = new Histogram({
    name: 'flash_sale_order_duration_seconds',
    help: 'Time to answer POST /sales/:id/orders',
    labelNames: ['strategy', 'outcome'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  })
  // The lock buckets start lower than latchkey's default: an uncontended memory or Redis lock takes well under 1 ms.
  const locks = prometheusMetrics({ registry, buckets: LATENCY_BUCKETS })
  const live = new LiveStats()
  return {
    registry,
    live,
    order(strategy, seconds) {
      orders.inc({ strategy })
      duration.observe({ strategy, outcome: 'ordered' }, seconds)
      live.record(strategy, true, seconds * 1000)
    },
    reject(strategy, reason, seconds) {
      rejections.inc({ strategy, reason })
      duration.observe({ strategy, outcome: reason }, seconds)
      // Bad input and unknown sales say nothing about a strategy's behaviour under load.
      if (reason !== 'invalid' && reason !== 'unknown_sale') live.record(strategy, false, seconds * 1000)
    },
    onLockEvent: locks.onEvent,
  }
}
