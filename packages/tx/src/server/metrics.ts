/**
 * Prometheus metrics of a coordinator, built from its `onEvent` stream, on a registry of their own (never
 * prom-client's global one, so that an application embedding the server keeps its own metrics apart).
 */
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import type { TxEvent } from '../types.js'
import { HELPER_NAMES } from './dtm-tcc.js'

/** The metrics and the `onEvent` listener that feeds them. */
export interface TxMetrics {
  readonly registry: Registry
  readonly onEvent: (event: TxEvent) => void
}

const TRANSITIONS = new Set(['created', 'submitted', 'aborting', 'succeeded', 'failed', 'parked', 'recovered'])
const OUTCOMES: Record<string, string> = {
  'branch-succeeded': 'succeeded',
  'branch-failed': 'failed',
  'branch-retry': 'retry',
}

/** Creates the metrics. `defaults` adds prom-client's process metrics (CPU, memory, event loop). */
export function createTxMetrics(defaults = true): TxMetrics {
  const registry = new Registry()
  if (defaults) collectDefaultMetrics({ register: registry, prefix: 'latchkey_tx_process_' })
  const transactions = new Counter({
    name: 'latchkey_tx_transactions_total',
    help: 'Transactions reaching a status (created counts new ones; recovered counts resumptions), by kind',
    labelNames: ['kind', 'status'],
    registers: [registry],
  })
  const branchCalls = new Counter({
    name: 'latchkey_tx_branch_calls_total',
    help: 'Branch operation calls by op and outcome (succeeded, failed, retry)',
    labelNames: ['op', 'outcome'],
    registers: [registry],
  })
  const retries = new Counter({
    name: 'latchkey_tx_retries_total',
    help: 'Branch calls that failed and will be retried after a backoff, by op',
    labelNames: ['op'],
    registers: [registry],
  })
  const parked = new Counter({
    name: 'latchkey_tx_parked_total',
    help: 'Transactions parked after a branch ran out of retries (a human decides: retry or abort)',
    labelNames: ['kind'],
    registers: [registry],
  })
  const durations = new Histogram({
    name: 'latchkey_tx_branch_call_seconds',
    help: 'Duration of branch calls, by op',
    labelNames: ['op'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  })
  const onEvent = (e: TxEvent) => {
    // The TCC service's registration and decision records are bookkeeping, not transactions.
    if (HELPER_NAMES.includes(e.name)) return
    if (TRANSITIONS.has(e.type)) transactions.inc({ kind: e.kind, status: e.type === 'created' ? 'created' : e.type })
    const outcome = OUTCOMES[e.type]
    if (outcome !== undefined && e.op !== undefined) {
      branchCalls.inc({ op: e.op, outcome })
      if (e.ms !== undefined) durations.observe({ op: e.op }, e.ms / 1000)
    }
    if (e.type === 'branch-retry' && e.op !== undefined) retries.inc({ op: e.op })
    if (e.type === 'parked') parked.inc({ kind: e.kind })
  }
  return { registry, onEvent }
}
