/**
 * The two client sides of a contended handoff, for any backend URL: `waiters` mutex waiters on one lock spread over
 * `procs` processes (hold 1 ms, think 5 ms, as the report's contended cells), and per handoff
 *
 * - the gap: another waiter's acquire() returning minus the previous holder's release() call (CLOCK_MONOTONIC, shared
 *   by the processes);
 * - the releaser's side: its release() call to its process's next socket write (the release request on its way);
 * - the next holder's side: its process's last socket read before acquire() returned (the notification that woke
 *   it, or the answer that granted it) to acquire() returning.
 *
 * What is left of the gap is the server's and the kernel's: the write's commit and the notification's delivery. Reads
 * are timed where each transport takes them in: latchkey's ZooKeeper and etcd clients' frame readers, and any
 * other socket's `push` (ioredis, the SQL drivers).
 *
 *   npx tsx bench/handoff-sides.ts <url> [waiters=10] [procs=4] [seconds=5]
 *   e.g. zookeeper://127.0.0.1:2181, etcd://127.0.0.1:2379, redis://127.0.0.1:6379
 *
 * LIB=<absolute path of another build's dist> runs that build instead (a change against the code before it).
 * FLOOR=<name> runs that floor of bench/lib/floors.ts on `url` instead of latchkey (e.g. FLOOR=proto-blpop with a
 * redis:// URL, FLOOR=zk-recipe with a ZooKeeper connect string): the same split for the request pattern alone.
 * PROF_DIR=<dir>: each child runs under --cpu-prof and writes its profile there (bench/lib/cpu-profile-summary.mjs,
 * whose window arguments leave out start-up); PROF_INTERVAL=<µs> samples more often than every 1,000 µs.
 */
import { fork } from 'node:child_process'
import net from 'node:net'
import { fileURLToPath } from 'node:url'
import type { FloorName } from './lib/contender.js'
import { HandoffSplit } from './lib/handoff-split.js'
import { openLockSide } from './lib/lock-side.js'
import { hostNow } from './lib/stats.js'

const LIB = process.env.LIB ?? fileURLToPath(new URL('../packages/latchkey/dist', import.meta.url))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Report {
  readonly acquisitions: number
  readonly cpuMs: number
  /** Per acquisition in the window: [acquire() returned, release() called], host monotonic ms. */
  readonly holds: [number, number][]
  readonly releaseToWrite: number[]
  readonly readToGrant: number[]
}

/** Calls `before` ahead of every call of `proto[method]`. */
function hook(proto: Record<string, unknown>, method: string, before: () => void): void {
  const original = proto[method] as (...args: unknown[]) => unknown
  proto[method] = function (this: unknown, ...args: unknown[]) {
    before()
    return original.apply(this, args)
  }
}

async function child(url: string, waiters: number, key: string, seconds: number): Promise<void> {
  const split = new HandoffSplit(hostNow)
  hook(net.Socket.prototype as never, 'write', () => split.wrote())
  const read = () => split.read()
  hook(net.Socket.prototype as never, 'push', read)
  const zk = await import(`${LIB}/backends/zookeeper/zk-frames.js`)
  hook(zk.ZkFrames.prototype, 'push', read)
  const etcd = await import(`${LIB}/backends/etcd/wire/h2-frames.js`)
  hook(etcd.FrameReader.prototype, 'push', read)
  const { acquire, close } = await openLockSide({
    dist: LIB,
    url,
    floor: process.env.FLOOR as FloorName | undefined,
    namespace: 'handoff-sides', // the key is new in each run
    key,
  })
  const warmEnd = performance.now() + 1_500
  const end = warmEnd + seconds * 1_000
  let cpu0 = process.cpuUsage()
  setTimeout(() => {
    cpu0 = process.cpuUsage()
  }, 1_500)
  let acquisitions = 0
  const holds: [number, number][] = []
  await Promise.all(
    Array.from({ length: waiters }, async (_, i) => {
      await sleep(i % 2)
      while (performance.now() < end) {
        let held: { release(): Promise<unknown> } | undefined
        try {
          held = await acquire(Math.max(1, Math.ceil(end - performance.now())))
        } catch {
          continue
        }
        if (held === undefined) continue
        const at = hostNow()
        const now = performance.now()
        const counted = now >= warmEnd && now < end
        split.granted(at, counted)
        if (counted) acquisitions++
        await sleep(1)
        const releasedAt = split.releasing()
        if (counted) holds.push([at, releasedAt])
        await held.release()
        await sleep(5)
      }
    }),
  )
  const cpu = process.cpuUsage(cpu0)
  process.send?.({
    acquisitions,
    cpuMs: (cpu.user + cpu.system) / 1_000,
    holds,
    releaseToWrite: split.releaseToWrite,
    readToGrant: split.readToGrant,
  } satisfies Report)
  await close()
  process.exit(0)
}

/** With PROF_DIR=<dir> each child runs under --cpu-prof (every PROF_INTERVAL µs) and writes its profile there. */
const profiled =
  process.env.PROF_DIR === undefined
    ? []
    : ['--cpu-prof', '--cpu-prof-interval', process.env.PROF_INTERVAL ?? '1000', '--cpu-prof-dir', process.env.PROF_DIR]

async function parent(url: string, waiters: number, procs: number, seconds: string): Promise<void> {
  const key = `k${Date.now()}`
  const reports = await Promise.all(
    Array.from({ length: procs }, (_, i) => {
      const n = Math.floor(waiters / procs) + (i < waiters % procs ? 1 : 0)
      const c = fork(fileURLToPath(import.meta.url), ['child', url, String(n), key, seconds], {
        execArgv: ['--import', 'tsx', ...profiled],
      })
      return new Promise<Report>((ok) => c.once('message', (m) => ok(m as Report)))
    }),
  )
  const acquisitions = reports.reduce((s, r) => s + r.acquisitions, 0)
  const cpu = reports.reduce((s, r) => s + r.cpuMs, 0)
  const holds = reports.flatMap((r) => r.holds).sort((a, b) => a[0] - b[0])
  const gaps = holds.slice(1).map((h, i) => h[0] - (holds[i] as [number, number])[1])
  const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? Number.NaN
  const µs = (ms: number) => `${(ms * 1_000).toFixed(0)} µs`
  console.log(
    `${url}, ${waiters} waiters over ${procs} processes: ${acquisitions} acquisitions, client CPU ${(cpu / acquisitions).toFixed(3)} ms each; gap p50 ${µs(p50(gaps))}: release() to its socket write ${µs(p50(reports.flatMap((r) => r.releaseToWrite)))}, last socket read to acquire() returning ${µs(p50(reports.flatMap((r) => r.readToGrant)))}`,
  )
}

const [first, ...rest] = process.argv.slice(2)
if (first === 'child') {
  const [url, waiters, key, seconds] = rest
  await child(url as string, Number(waiters), key as string, Number(seconds))
} else {
  if (first === undefined)
    throw new Error('usage: npx tsx bench/handoff-sides.ts <backend url> [waiters] [procs] [seconds]')
  const [waiters = '10', procs = '4', seconds = '5'] = rest
  await parent(first, Number(waiters), Number(procs), seconds)
}
