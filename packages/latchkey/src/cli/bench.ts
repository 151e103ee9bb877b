/**
 * `latchkey bench`: a short measurement of one backend as this host sees it. Uncontended: one acquirer takes
 * and releases one lock in a loop. Contended: `concurrency` acquirers (each its own `Locks`, as separate
 * services would be) take turns on one lock. Reports acquisitions per second and the acquire latency (wait
 * included) at p50 and p99. Lock names are unique to the run; every lease is released.
 */
import { randomUUID } from 'node:crypto'
import type { Backend } from '../backend/types.js'
import { createLocks, type Locks } from '../core/locks.js'

/** One phase's result. */
export interface BenchResult {
  readonly phase: 'uncontended' | 'contended'
  readonly acquirers: number
  readonly acquisitions: number
  readonly durationMs: number
  readonly perSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
}

/** The value below which `q` of the sorted samples lie (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number
}

async function phase(
  instances: readonly Locks[],
  name: string,
  durationMs: number,
  what: BenchResult['phase'],
): Promise<BenchResult> {
  const samples: number[] = []
  const start = performance.now()
  const end = start + durationMs
  await Promise.all(
    instances.map(async (locks) => {
      const lock = locks.mutex(name)
      while (performance.now() < end) {
        const t = performance.now()
        const lease = await lock.acquire({ ttlMs: 10_000, waitMs: 30_000 })
        samples.push(performance.now() - t)
        await lease.release()
      }
    }),
  )
  const elapsed = performance.now() - start
  const sorted = samples.sort((a, b) => a - b)
  const round = (ms: number) => Math.round(ms * 100) / 100
  return {
    phase: what,
    acquirers: instances.length,
    acquisitions: samples.length,
    durationMs: Math.round(elapsed),
    perSecond: Math.round((samples.length / elapsed) * 1_000),
    p50Ms: round(quantile(sorted, 0.5)),
    p99Ms: round(quantile(sorted, 0.99)),
  }
}

/** Runs both phases on `backend`. */
export async function bench(
  backend: Backend,
  options: { durationMs: number; concurrency: number; namespace: string },
): Promise<BenchResult[]> {
  const run = `latchkey-bench-${randomUUID().slice(0, 8)}`
  const make = () => createLocks({ backend, namespace: options.namespace === '' ? run : `${options.namespace}:${run}` })
  const single = make()
  const many = Array.from({ length: options.concurrency }, make)
  try {
    return [
      await phase([single], 'uncontended', options.durationMs, 'uncontended'),
      await phase(many, 'contended', options.durationMs, 'contended'),
    ]
  } finally {
    await Promise.all([single, ...many].map((l) => l.close()))
  }
}
