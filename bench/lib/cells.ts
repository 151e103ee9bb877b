/**
 * One measured cell, run by the parent across the worker pool: open the contender in the workers it needs
 * (which warm it up), read the server counters, run the window, read them again, close.
 */
import { analyse } from './analysis.js'
import type { ContenderDef } from './contender-defs.js'
import { type ContendedResult, type UncontendedResult, until } from './modes.js'
import type { WorkerPool } from './pool.js'
import { RedisProbe, type ServerCounters } from './redis-probe.js'
import { hostNow, sleep } from './stats.js'

/** Every figure a cell can have (NaN where it does not apply). */
export interface CellFigures {
  readonly ops: number
  /** Lock+unlock pairs/s (uncontended) or acquisitions/s (contended). */
  readonly rate: number
  readonly cpuPer1k: number
  readonly cmdsPerOp: number
  /** Commands the contender's ioredis clients sent per op (NaN for other clients). */
  readonly clientCmdsPerOp: number
  readonly serverCpuPer1k: number
  readonly latP50: number
  readonly latP99: number
  readonly gapP50: number
  readonly gapP99: number
  readonly overlaps: number
  readonly fairness: number
  readonly starved: number
  readonly giveUps: number
  /** Waiters actually run (after scaling down) and the processes they were spread over. */
  readonly waiters: number
  readonly processes: number
}

const NONE = Number.NaN
const TTL_MS = 10_000

/** What runs a cell's windows: the Node worker pool, or a stand-in for a contender of another runtime. */
export type CellPool = Pick<WorkerPool, 'size' | 'request' | 'all'>

/** Where a cell runs. */
export interface CellPlace {
  readonly pool: CellPool
  readonly namespace: string
  readonly key: string
}

async function withOpen<T>(
  place: CellPlace,
  def: ContenderDef,
  n: number,
  fn: () => Promise<T>,
  concurrency?: number,
): Promise<T> {
  const spec = def.spec(place.namespace, TTL_MS, concurrency)
  try {
    await place.pool.all(n, () => ({ op: 'open', spec }))
    return await fn()
  } finally {
    await place.pool.all(n, () => ({ op: 'close' })).catch(() => undefined)
  }
}

/** Server counters at the window's end (read while the workers drain), as a delta from `from`. */
async function windowDelta(probe: RedisProbe, from: ServerCounters, endAt: number): Promise<ServerCounters> {
  const wait = endAt - hostNow()
  if (wait > 0) await sleep(wait)
  const to = await probe.read()
  return { calls: to.calls - from.calls, cpuMs: to.cpuMs - from.cpuMs }
}

/** `concurrency` loops on distinct keys in one worker for `ms`. */
export async function uncontendedCell(
  place: CellPlace,
  def: ContenderDef,
  concurrency: number,
  ms: number,
): Promise<CellFigures> {
  return withOpen(
    place,
    def,
    1,
    async () => {
      const probe = new RedisProbe(def.probeUrls)
      try {
        const from = await probe.read()
        const startAt = hostNow() + 30
        const run = place.pool.request<UncontendedResult>(0, {
          op: 'uncontended',
          concurrency,
          keyPrefix: place.key,
          startAt,
          endAt: startAt + ms,
        })
        const [r, server] = await Promise.all([run, windowDelta(probe, from, startAt + ms)])
        return {
          ...blank(concurrency, 1),
          ops: r.ops,
          rate: r.ops / r.seconds,
          cpuPer1k: (r.cpuMs / r.ops) * 1000,
          cmdsPerOp: server.calls / r.ops,
          clientCmdsPerOp: r.clientCmds > 0 ? r.clientCmds / r.ops : NONE,
          serverCpuPer1k: (server.cpuMs / r.ops) * 1000,
          latP50: r.latP50,
          latP99: r.latP99,
        }
      } finally {
        await probe.close()
      }
    },
    concurrency,
  )
}

/**
 * `waiters` on one key spread over the pool, or over its first `maxProcesses` workers (one worker when the
 * contender cannot cross processes).
 */
export async function contendedCell(
  place: CellPlace,
  def: ContenderDef,
  waiters: number,
  ms: number,
  timing: { holdMs: number; thinkMs: number; rampMs: number },
  maxProcesses = place.pool.size,
): Promise<CellFigures> {
  const processes = def.crossProcess ? Math.min(place.pool.size, maxProcesses, waiters) : 1
  const share = (i: number) => Math.floor(waiters / processes) + (i < waiters % processes ? 1 : 0)
  const firstId = (i: number) => Array.from({ length: i }, (_, j) => share(j)).reduce((a, b) => a + b, 0)
  return withOpen(place, def, processes, async () => {
    const probe = new RedisProbe(def.probeUrls)
    try {
      const startAt = hostNow() + 50
      const measureFrom = startAt + timing.rampMs
      const endAt = measureFrom + ms
      const runs = place.pool.all<ContendedResult>(processes, (i) => ({
        op: 'contended',
        waiters: share(i),
        firstId: firstId(i),
        key: place.key,
        startAt,
        measureFrom,
        endAt,
        holdMs: timing.holdMs,
        thinkMs: timing.thinkMs,
      }))
      const server = until(measureFrom).then(async () => windowDelta(probe, await probe.read(), endAt))
      const [parts, delta] = await Promise.all([runs, server])
      const f = analyse(
        parts.map((p) => p.intervals),
        waiters,
      )
      const cpuMs = parts.reduce((s, p) => s + p.cpuMs, 0)
      const clientCmds = parts.reduce((s, p) => s + p.clientCmds, 0)
      const ops = f.acquisitions
      return {
        ...blank(waiters, processes),
        ...f,
        ops,
        rate: ops / (ms / 1000),
        cpuPer1k: (cpuMs / ops) * 1000,
        cmdsPerOp: delta.calls / ops,
        clientCmdsPerOp: clientCmds > 0 ? clientCmds / ops : NONE,
        serverCpuPer1k: (delta.cpuMs / ops) * 1000,
        giveUps: parts.reduce((s, p) => s + p.giveUps, 0),
      }
    } finally {
      await probe.close()
    }
  })
}

function blank(waiters: number, processes: number) {
  return {
    ops: 0,
    rate: NONE,
    cpuPer1k: NONE,
    cmdsPerOp: NONE,
    clientCmdsPerOp: NONE,
    serverCpuPer1k: NONE,
    latP50: NONE,
    latP99: NONE,
    gapP50: NONE,
    gapP99: NONE,
    overlaps: NONE,
    fairness: NONE,
    starved: NONE,
    giveUps: NONE,
    waiters,
    processes,
  }
}
