import { exited, forkEntry, nextMessage } from '../fork.js'
import { type OrderTarget, orderPath } from '../server/ceiling-route.js'
import { type BuyerCounts, type BuyerJob, type BuyerReport, zeroCounts } from './types.js'

/** Options of {@link runLoad}. */
export interface LoadOptions {
  /** Service base URLs; buyers are spread over them round-robin. */
  readonly urls: readonly string[]
  readonly saleId: string
  /** Default 10 000. */
  readonly buyers?: number
  /** Buyer OS processes. Default 2. */
  readonly processes?: number
  /** Requests in flight per process. Default 64. */
  readonly concurrency?: number
  /** Share of buyers who order twice. Default 0.05. */
  readonly duplicateRate?: number
  /** Units per order. Default 1. */
  readonly quantity?: number
  /** Send the orders to the order route (default) or to the ceiling probe, which must be enabled on the services. */
  readonly target?: OrderTarget
  /** Called about every 200 ms with buyers done so far. */
  readonly onProgress?: (done: number, total: number) => void
}

/** What {@link runLoad} measured. */
export interface LoadResult {
  readonly buyers: number
  readonly counts: BuyerCounts
  /** From the moment every buyer process was started and ready to the last answer. */
  readonly elapsedMs: number
  /** Sorted request latencies in ms. */
  readonly latencies: Float64Array
  /** Every order id a client was given (201). */
  readonly orderIds: ReadonlySet<string>
  /** Every order id a client was told was declined (402, paid sales). */
  readonly declinedIds: ReadonlySet<string>
  readonly samples: readonly string[]
  /** From the start of the load to the last accepted order, in ms (0 when nothing sold). */
  readonly soldInMs: number
}

/** The q-quantile (0..1) of sorted values, 0 when empty. */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
}

/**
 * Sends `buyers` orders from `processes` buyer processes and gathers their reports.
 *
 * @example
 * const result = await runLoad({ urls: cluster.urls, saleId: sale.id, buyers: 10_000 })
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const buyers = options.buyers ?? 10_000
  const processes = Math.max(1, Math.min(options.processes ?? 2, buyers))
  const done = new Array<number>(processes).fill(0)
  const children = Array.from({ length: processes }, () => forkEntry('load/buyer-worker.ts', []))
  try {
    // Starting a buyer process takes from 0.3 s to 2 s on a loaded machine, as long as a whole sale of
    // 1,000 buyers: the clock starts once every buyer process can send.
    await Promise.all(
      children.map((child) =>
        nextMessage(child, (m) => ((m as { type?: string }).type === 'ready' ? true : undefined)),
      ),
    )
    const started = performance.now()
    const startedAt = Date.now()
    const reports = await Promise.all(
      children.map((child, i) => {
        child.on('message', (m: { type?: string; done?: number }) => {
          if (m.type !== 'progress') return
          done[i] = m.done ?? 0
          options.onProgress?.(
            done.reduce((a, b) => a + b, 0),
            buyers,
          )
        })
        const job: BuyerJob = {
          type: 'start',
          urls: options.urls,
          saleId: options.saleId,
          path: orderPath(options.saleId, options.target),
          from: Math.floor((buyers * i) / processes),
          to: Math.floor((buyers * (i + 1)) / processes),
          concurrency: options.concurrency ?? 64,
          duplicateRate: options.duplicateRate ?? 0.05,
          quantity: options.quantity ?? 1,
        }
        child.send(job)
        return nextMessage(
          child,
          (m) => ((m as BuyerReport).type === 'result' ? (m as BuyerReport) : undefined),
          600_000,
        )
      }),
    )
    const elapsedMs = performance.now() - started
    options.onProgress?.(buyers, buyers)
    return merge(buyers, reports, elapsedMs, startedAt)
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill()
    await Promise.all(children.map(exited))
  }
}

function merge(buyers: number, reports: readonly BuyerReport[], elapsedMs: number, startedAt: number): LoadResult {
  const counts = zeroCounts()
  for (const report of reports) {
    for (const key of Object.keys(counts) as Array<keyof BuyerCounts>) counts[key] += report.counts[key]
  }
  const total = reports.reduce((n, r) => n + r.latencies.length, 0)
  const latencies = new Float64Array(total)
  let at = 0
  for (const report of reports) {
    latencies.set(report.latencies, at)
    at += report.latencies.length
  }
  latencies.sort()
  return {
    buyers,
    counts,
    elapsedMs,
    latencies,
    orderIds: new Set(reports.flatMap((r) => r.orderIds)),
    declinedIds: new Set(reports.flatMap((r) => r.declinedIds)),
    samples: reports.flatMap((r) => r.samples),
    soldInMs: Math.max(0, Math.max(...reports.map((r) => r.lastOrderAt)) - startedAt),
  }
}
