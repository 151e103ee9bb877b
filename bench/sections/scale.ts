/**
 * Scale and memory: a million acquire/release cycles (heap after GC at each quarter, RSS), many distinct
 * locks held at once by one process (heap and server memory per lock, the watchdog's renewal load on the
 * server), and many waiters on one lock (heap per waiter, drain time, handoffs, overlaps).
 */
import { analyse } from '../lib/analysis.js'
import type { ContenderDef } from '../lib/contender-defs.js'
import type { WorkerPool } from '../lib/pool.js'
import { RedisProbe } from '../lib/redis-probe.js'
import type { Checkpoint, DrainResult, HoldManyResult } from '../lib/scale-modes.js'
import { hostNow } from '../lib/stats.js'

/** Sizes of the scale section. */
export interface ScaleConfig {
  readonly cycles: number
  readonly redisCycles: number
  readonly held: number
  readonly holdMs: number
  /** Lease TTL of the held locks (renewed every TTL/3). */
  readonly heldTtlMs: number
  readonly waiters: number
  readonly settleMs: number
}

/** What the section measured, per contender id. */
export interface ScaleResults {
  cycles: {
    id: string
    total: number
    concurrency: number
    checkpoints: Checkpoint[]
    seconds: number
    serverCallsPerCycle: number
    cpuMs: number
  }[]
  held: ({ id: string; ttlMs: number } & HoldManyResult)[]
  drains: {
    id: string
    waiters: number
    processes: number
    heapPerWaiter: number
    drainSeconds: number
    handoffsPerSecond: number
    gapP50: number
    gapP99: number
    overlaps: number
    giveUps: number
    cmdsPerAcquisition: number
  }[]
  errors: { test: string; id: string; error: string }[]
}

const DEFAULT_TTL_MS = 30_000

async function opened<T>(
  pool: WorkerPool,
  def: ContenderDef,
  n: number,
  ns: string,
  ttl: number,
  fn: () => Promise<T>,
) {
  await pool.all(n, () => ({ op: 'open', spec: def.spec(ns, ttl) }))
  try {
    return await fn()
  } finally {
    await pool.all(n, () => ({ op: 'close' })).catch(() => undefined)
  }
}

/** A drain's figures from the workers' parts; `calls`: server commands during it. */
function drainFigures(parts: readonly DrainResult[], waiters: number, gateAt: number, calls: number) {
  const f = analyse(
    parts.map((p) => p.intervals),
    waiters,
  )
  const last = Math.max(...parts.flatMap((p) => p.intervals.filter((_, k) => k % 3 === 0)))
  const drainSeconds = (last - gateAt) / 1000
  const heap = parts.reduce((s, p) => s + (p.queued.heapUsed - p.before.heapUsed), 0)
  return {
    waiters,
    heapPerWaiter: heap / waiters,
    drainSeconds,
    handoffsPerSecond: f.acquisitions / drainSeconds,
    gapP50: f.gapP50,
    gapP99: f.gapP99,
    overlaps: f.overlaps,
    giveUps: parts.reduce((s, p) => s + p.giveUps, 0),
    cmdsPerAcquisition: calls / f.acquisitions,
  }
}

async function drainCell(pool: WorkerPool, def: ContenderDef, cfg: ScaleConfig, ns: string) {
  const processes = def.crossProcess ? pool.size : 1
  const share = (i: number) => Math.floor(cfg.waiters / processes) + (i < cfg.waiters % processes ? 1 : 0)
  return opened(pool, def, processes, ns, DEFAULT_TTL_MS, async () => {
    const probe = new RedisProbe(def.probeUrls)
    try {
      const from = await probe.read()
      const startAt = hostNow() + 500
      const gateAt = startAt + cfg.settleMs
      const parts = await pool.all<DrainResult>(processes, (i) => ({
        op: 'drain',
        waiters: share(i),
        firstId: Array.from({ length: i }, (_, j) => share(j)).reduce((a, b) => a + b, 0),
        key: 'drain',
        startAt,
        gateAt,
        gate: i === 0,
        waitMs: 600_000,
      }))
      const to = await probe.read()
      return { id: def.id, processes, ...drainFigures(parts, cfg.waiters, gateAt, to.calls - from.calls) }
    } finally {
      await probe.close()
    }
  })
}

/** Runs the scale tests on the given contenders (memory and Redis in the report). */
export async function runScale(
  pool: WorkerPool,
  defs: readonly ContenderDef[],
  cfg: ScaleConfig,
  ns: string,
  log: (line: string) => void,
): Promise<ScaleResults> {
  const out: ScaleResults = { cycles: [], held: [], drains: [], errors: [] }
  const attempt = async (test: string, def: ContenderDef, fn: () => Promise<void>) => {
    const t0 = performance.now()
    try {
      await fn()
      log(`scale ${test} ${def.id} (${((performance.now() - t0) / 1000).toFixed(1)} s)`)
    } catch (error) {
      out.errors.push({ test, id: def.id, error: error instanceof Error ? error.message : String(error) })
      log(`scale ${test} ${def.id} ERROR ${String(error)}`)
    }
  }
  for (const def of defs) {
    const probeUrl = def.probeUrls[0]
    const probe = probeUrl === undefined ? {} : { probeUrl }
    const total = def.probeUrls.length > 0 ? cfg.redisCycles : cfg.cycles
    if (total > 0) {
      await attempt('cycles', def, async () => {
        const r = await opened(pool, def, 1, ns, DEFAULT_TTL_MS, () =>
          pool.request<{ checkpoints: Checkpoint[]; seconds: number; serverCalls: number; cpuMs: number }>(0, {
            op: 'cycles',
            total,
            concurrency: 50,
            keyPrefix: 'cycle',
            ...probe,
          }),
        )
        out.cycles.push({ id: def.id, total, concurrency: 50, ...r, serverCallsPerCycle: r.serverCalls / total })
      })
    }
    await attempt('held', def, async () => {
      const r = await opened(pool, def, 1, ns, cfg.heldTtlMs, () =>
        pool.request<HoldManyResult>(0, {
          op: 'hold-many',
          count: cfg.held,
          batch: 500,
          holdMs: cfg.holdMs,
          keyPrefix: 'held',
          ...probe,
        }),
      )
      out.held.push({ id: def.id, ttlMs: cfg.heldTtlMs, ...r })
    })
    await attempt('drain', def, async () => {
      out.drains.push(await drainCell(pool, def, cfg, ns))
    })
  }
  return out
}
