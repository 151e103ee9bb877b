/**
 * The scale cells a worker runs: many waiters draining one lock, a million acquire/release cycles, and many
 * locks held at once. Heap figures are taken after a full GC (workers run with --expose-gc).
 */
import { Redis } from 'ioredis'
import type { Contender, Held } from './contender.js'
import { cpuSince, until } from './modes.js'
import { hostNow, sleep } from './stats.js'

/** Heap (after GC) and RSS in bytes. */
export interface MemorySample {
  readonly heapUsed: number
  readonly rss: number
}

/** Heap after a full collection, and RSS. */
export function memory(): MemorySample {
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  gc?.()
  const m = process.memoryUsage()
  return { heapUsed: m.heapUsed, rss: m.rss }
}

/** A worker's part of a drain: `intervals` as in contended cells, heap before and while its waiters queued. */
export interface DrainResult {
  readonly intervals: number[]
  readonly before: MemorySample
  readonly queued: MemorySample
  readonly cpuMs: number
  readonly giveUps: number
}

/**
 * `waiters` each acquire `key` once and release at once. The lock is held by a gate (taken here when `gate`)
 * until `gateAt`, so every waiter is queued first; memory is sampled before the waiters start and just
 * before the gate opens.
 */
export async function drain(
  c: Contender,
  o: { waiters: number; firstId: number; key: string; startAt: number; gateAt: number; gate: boolean; waitMs: number },
): Promise<DrainResult> {
  const gate = o.gate ? await c.acquire(o.key, 10_000) : undefined
  const before = memory()
  await until(o.startAt)
  const cpu0 = process.cpuUsage()
  const intervals: number[] = []
  let giveUps = 0
  const all = Promise.all(
    Array.from({ length: o.waiters }, async (_, i) => {
      const held = await c.acquire(o.key, o.waitMs)
      if (held === undefined) {
        giveUps++
        return
      }
      intervals.push(hostNow(), hostNow(), o.firstId + i)
      await held.release()
    }),
  )
  await until(o.gateAt - 150)
  const queued = memory()
  await until(o.gateAt)
  if (gate !== undefined) {
    intervals.push(o.startAt, hostNow(), -1)
    await gate.release()
  }
  await all
  return { intervals, before, queued, cpuMs: cpuSince(cpu0), giveUps }
}

/** Redis server figures read by a worker around its own cell. */
function serverProbe(url: string | undefined) {
  const admin = url === undefined ? undefined : new Redis(url)
  return {
    /** Commands (including those inside Lua), scripts called (EVALSHA/EVAL: one per renewal), memory. */
    async read(): Promise<{ calls: number; scripts: number; usedMemory: number }> {
      if (admin === undefined) return { calls: Number.NaN, scripts: Number.NaN, usedMemory: Number.NaN }
      const stats = await admin.info('commandstats')
      let calls = 0
      let scripts = 0
      for (const m of stats.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) {
        if (m[1] !== 'info') calls += Number(m[2])
        if (m[1] === 'evalsha' || m[1] === 'eval') scripts += Number(m[2])
      }
      const mem = /^used_memory:(\d+)/m.exec(await admin.info('memory'))
      return { calls, scripts, usedMemory: Number(mem?.[1] ?? Number.NaN) }
    },
    close: async () => void (await admin?.quit()),
  }
}

/** Memory at a point of a long run. */
export interface Checkpoint extends MemorySample {
  readonly cycles: number
}

/** `total` acquire→release cycles by `concurrency` loops on their own keys; memory every quarter. */
export async function cycles(
  c: Contender,
  o: { total: number; concurrency: number; keyPrefix: string; probeUrl?: string },
): Promise<{ checkpoints: Checkpoint[]; seconds: number; serverCalls: number; cpuMs: number }> {
  const probe = serverProbe(o.probeUrl)
  const checkpoints: Checkpoint[] = [{ cycles: 0, ...memory() }]
  const s0 = await probe.read()
  const cpu0 = process.cpuUsage()
  const t0 = hostNow()
  let done = 0
  for (let quarter = 1; quarter <= 4; quarter++) {
    const target = Math.round((o.total * quarter) / 4)
    await Promise.all(
      Array.from({ length: o.concurrency }, async (_, i) => {
        while (done < target) {
          done++
          const held = await c.acquire(`${o.keyPrefix}:${i}`, 10_000)
          if (held === undefined) throw new Error('uncontended acquire failed')
          await held.release()
        }
      }),
    )
    checkpoints.push({ cycles: done, ...memory() })
  }
  const seconds = (hostNow() - t0) / 1000
  const cpuMs = cpuSince(cpu0)
  const serverCalls = (await probe.read()).calls - s0.calls
  await probe.close()
  return { checkpoints, seconds, serverCalls, cpuMs }
}

/** What holding many locks at once cost. */
export interface HoldManyResult {
  readonly count: number
  readonly acquireSeconds: number
  readonly before: MemorySample
  readonly holding: MemorySample
  readonly serverMemoryPerLock: number
  /** Server commands per second while holding (the watchdog's renewals, including commands inside Lua). */
  readonly serverCallsPerSecond: number
  /** Scripts (EVALSHA/EVAL) per second while holding: the renewals themselves. */
  readonly serverScriptsPerSecond: number
  readonly cpuMsPerSecond: number
  readonly releaseSeconds: number
  readonly lost: number
}

/** Acquires `count` distinct locks (`batch` at a time), holds them `holdMs` while they renew, releases all. */
export async function holdMany(
  c: Contender,
  o: { count: number; batch: number; holdMs: number; keyPrefix: string; probeUrl?: string },
): Promise<HoldManyResult> {
  const probe = serverProbe(o.probeUrl)
  const before = memory()
  const s0 = await probe.read()
  const held: Held[] = []
  const t0 = hostNow()
  for (let from = 0; from < o.count; from += o.batch) {
    const n = Math.min(o.batch, o.count - from)
    const got = await Promise.all(Array.from({ length: n }, (_, i) => c.acquire(`${o.keyPrefix}:${from + i}`, 10_000)))
    for (const h of got) if (h !== undefined) held.push(h)
  }
  const acquireSeconds = (hostNow() - t0) / 1000
  const holding = memory()
  const s1 = await probe.read()
  const cpu0 = process.cpuUsage()
  await sleep(o.holdMs)
  const cpuMs = cpuSince(cpu0)
  const s2 = await probe.read()
  const t1 = hostNow()
  let lost = 0
  for (let from = 0; from < held.length; from += o.batch) {
    const results = await Promise.allSettled(held.slice(from, from + o.batch).map((h) => h.release()))
    lost += results.filter((r) => r.status === 'rejected').length
  }
  await probe.close()
  return {
    count: held.length,
    acquireSeconds,
    before,
    holding,
    serverMemoryPerLock: (s1.usedMemory - s0.usedMemory) / Math.max(1, held.length),
    serverCallsPerSecond: (s2.calls - s1.calls) / (o.holdMs / 1000),
    serverScriptsPerSecond: (s2.scripts - s1.scripts) / (o.holdMs / 1000),
    cpuMsPerSecond: cpuMs / (o.holdMs / 1000),
    releaseSeconds: (hostNow() - t1) / 1000,
    lost,
  }
}
