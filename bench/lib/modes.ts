/**
 * What a worker process runs in one cell, on the contender it opened. Times are host-monotonic ms
 * ({@link hostNow}), comparable across the worker processes of a cell.
 */
import { clientCommands } from './client-commands.js'
import type { Contender } from './contender.js'
import { ascending, hostNow, percentile, sleep } from './stats.js'

/** Start and end of the measured window. */
export interface Window {
  readonly startAt: number
  readonly endAt: number
}

/** A worker's part of an uncontended cell. */
export interface UncontendedResult {
  readonly ops: number
  readonly seconds: number
  readonly latP50: number
  readonly latP99: number
  readonly cpuMs: number
  /** ioredis commands sent in the window (0 for other clients). */
  readonly clientCmds: number
}

/** A worker's part of a contended cell: every acquisition as [acquiredAt, releaseCalledAt, waiterId]. */
export interface ContendedResult {
  readonly intervals: number[]
  readonly giveUps: number
  readonly cpuMs: number
  readonly clientCmds: number
}

/** Waits until `at` (host clock). */
export async function until(at: number): Promise<void> {
  const ms = at - hostNow()
  if (ms > 0) await sleep(ms)
}

/** CPU time (user + system) of this process in ms since `from`. */
export function cpuSince(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from)
  return (d.user + d.system) / 1000
}

/** `concurrency` loops of acquire→release, each on its own key, for the window. */
export async function uncontended(
  c: Contender,
  concurrency: number,
  keyPrefix: string,
  w: Window,
): Promise<UncontendedResult> {
  await until(w.startAt)
  const cpu0 = process.cpuUsage()
  const cmd0 = clientCommands()
  const t0 = hostNow()
  const lat: number[] = []
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const key = `${keyPrefix}:u${i}`
      while (hostNow() < w.endAt) {
        const s = hostNow()
        const held = await mustAcquire(c, key)
        lat.push(hostNow() - s)
        await held.release()
      }
    }),
  )
  const seconds = (hostNow() - t0) / 1000
  const cpuMs = cpuSince(cpu0)
  const sorted = ascending(lat)
  const clientCmds = clientCommands() - cmd0
  return { ops: lat.length, seconds, latP50: percentile(sorted, 50), latP99: percentile(sorted, 99), cpuMs, clientCmds }
}

async function mustAcquire(c: Contender, key: string) {
  const held = await c.acquire(key, 10_000)
  if (held === undefined) throw new Error(`uncontended acquire of ${key} failed`)
  return held
}

/**
 * `waiters` loops on one key from `startAt`: acquire (waiting at most until the window ends), hold `holdMs`,
 * release, think `thinkMs`. Only what happens from `measureFrom` (after the waiters queued up) to `endAt` is
 * reported; acquisitions after the window are released at once.
 */
export async function contended(
  c: Contender,
  waiters: number,
  firstId: number,
  key: string,
  w: Window & { measureFrom: number; holdMs: number; thinkMs: number },
): Promise<ContendedResult> {
  await until(w.startAt)
  const intervals: number[] = []
  let giveUps = 0
  // CPU and client commands are counted over the window only, like the acquisitions and the server counters.
  let cpu0 = process.cpuUsage()
  let cmd0 = clientCommands()
  let cpuMs = 0
  let clientCmds = 0
  const mark = until(w.measureFrom)
    .then(() => {
      cpu0 = process.cpuUsage()
      cmd0 = clientCommands()
      return until(w.endAt)
    })
    .then(() => {
      cpuMs = cpuSince(cpu0)
      clientCmds = clientCommands() - cmd0
    })
  await Promise.all(
    Array.from({ length: waiters }, async (_, i) => {
      // Waiters of one process start spread over the first millisecond, not in one synchronous burst.
      await sleep(i % 2)
      while (hostNow() < w.endAt) {
        const held = await c.acquire(key, Math.max(1, Math.ceil(w.endAt - hostNow()))).catch((error: unknown) => {
          // The wait ends with the window: a try still unanswered then (a loaded machine) is the window closing,
          // reported by the core as an unanswered backend. Before the window's end it is a real failure.
          if (hostNow() >= w.endAt && (error as { code?: unknown }).code === 'BACKEND_UNAVAILABLE') return undefined
          throw error
        })
        const at = hostNow()
        if (held === undefined) {
          if (at < w.endAt && at >= w.measureFrom) giveUps++
          continue
        }
        if (at >= w.endAt) {
          await held.release()
          break
        }
        await sleep(w.holdMs)
        if (at >= w.measureFrom) intervals.push(at, hostNow(), firstId + i)
        await held.release()
        await sleep(w.thinkMs)
      }
    }),
  )
  await mark
  return { intervals, giveUps, cpuMs, clientCmds }
}
