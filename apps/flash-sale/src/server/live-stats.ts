/** Per-strategy figures of this process, for the dashboard. */
export interface StrategyStats {
  readonly strategy: string
  /** Order requests answered in the last `windowMs`, per second. */
  readonly requestsPerSec: number
  /** Orders accepted in the last `windowMs`, per second. */
  readonly ordersPerSec: number
  /** Since start. */
  readonly requests: number
  readonly orders: number
  /** Latency quantiles (ms) over the last 1,000 answers. */
  readonly p50Ms: number
  readonly p99Ms: number
}

interface Track {
  requests: number
  orders: number
  /** Answer times (ms since start) within the window, and whether each was an order. */
  recent: Array<{ at: number; ordered: boolean }>
  latencies: number[]
}

/**
 * Rolling counters per strategy, fed by the order route, read by the dashboard's event stream.
 *
 * @example
 * const stats = new LiveStats()
 * stats.record('lock', true, 3.2)
 * stats.snapshot() // [{ strategy: 'lock', ordersPerSec: 0.2, ... }]
 */
export class LiveStats {
  private readonly tracks = new Map<string, Track>()

  /** Default window 5 000 ms. */
  constructor(private readonly windowMs = 5_000) {}

  record(strategy: string, ordered: boolean, latencyMs: number): void {
    let track = this.tracks.get(strategy)
    if (track === undefined) {
      track = { requests: 0, orders: 0, recent: [], latencies: [] }
      this.tracks.set(strategy, track)
    }
    track.requests++
    if (ordered) track.orders++
    track.recent.push({ at: performance.now(), ordered })
    track.latencies.push(latencyMs)
    if (track.latencies.length > 1_000) track.latencies.splice(0, track.latencies.length - 1_000)
  }

  snapshot(): StrategyStats[] {
    const since = performance.now() - this.windowMs
    return [...this.tracks.entries()].map(([strategy, track]) => {
      const firstKept = track.recent.findIndex((r) => r.at >= since)
      track.recent.splice(0, firstKept === -1 ? track.recent.length : firstKept)
      const sorted = [...track.latencies].sort((a, b) => a - b)
      const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
      return {
        strategy,
        requestsPerSec: (track.recent.length * 1000) / this.windowMs,
        ordersPerSec: (track.recent.filter((r) => r.ordered).length * 1000) / this.windowMs,
        requests: track.requests,
        orders: track.orders,
        p50Ms: at(0.5),
        p99Ms: at(0.99),
      }
    })
  }
}
