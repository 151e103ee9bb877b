/**
 * Where a contended etcd acquisition's client CPU goes: `waiters` mutex waiters on one lock spread over `procs`
 * processes (as the bench's contended cells: hold 1 ms, think 5 ms), each process reporting its acquisitions,
 * its CPU over the window and the gRPC calls it sent (per path) and watch responses it decoded, socket writes and
 * reads, timers and immediates set (the harness's two sleeps per acquisition included) and PINGs received, and the
 * handoff gap (a release() call to the next acquire() returning, in any process) with its two client sides: the
 * releaser's release() call to its next socket write, and the next holder's last socket read to its acquire()
 * returning. BYSTANDERS=n adds n processes that only follow the name's deletes (lib/etcd-bystander.ts;
 * BARE_BYSTANDERS=1 on a bare watch of the transport) and prints their CPU per watch response; they follow
 * latchkey's keys, so they see nothing beside a FLOOR.
 * HEAP_DIR=<dir> writes a sampling allocation profile of each child's window there (collected objects included).
 * With PROF_DIR=<dir> each child runs under --cpu-prof and writes its profile there. FLOOR=etcd-line (or etcd-go)
 * runs that floor (lib/etcd-line-floor.ts, lib/etcd-go-mutex-floor.ts) in place of latchkey, counted the same way.
 *
 *   npx tsx bench/etcd-contended-cpu.ts [waiters=10] [procs=4] [seconds=5] [dist=packages/latchkey/dist]
 */
import { fork } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { HandoffSplit } from './lib/handoff-split.js'
import { openLockSide } from './lib/lock-side.js'

const ETCD = process.env.LATCHKEY_ETCD_URL ?? 'http://127.0.0.1:2379'
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

type Report = {
  acq: number
  cpuMs: number
  systemMs: number
  calls: Record<string, number>
  /** Per acquisition in the window: when acquire() returned and when release() was called (epoch ms). */
  holds: [number, number][]
  /** Per release in the window: from the release() call to the process's next socket write (ms). */
  releaseToWrite: number[]
  /** Per acquisition in the window: from the process's last socket read to acquire() returning (ms). */
  readToGrant: number[]
}

/** utime + stime clock ticks per thread name of this process (empty where /proc is not there). */
function threadTicks(): Map<string, number> {
  const ticks = new Map<string, number>()
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      const name =
        stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[0-9]+$/, '') +
        (tid === String(process.pid) ? ' (main)' : '')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks.set(name, (ticks.get(name) ?? 0) + Number(fields[11]) + Number(fields[12]))
    }
  } catch {}
  return ticks
}

async function child(): Promise<void> {
  const [, , , waitersArg, key, secondsArg, dist] = process.argv
  const waiters = Number(waitersArg)
  const grpc = await import(pathToFileURL(resolve(dist as string, 'backends/etcd/wire/grpc-http2.js')).href)
  const calls: Record<string, number> = {}
  // The two client-side parts of a handoff gap: the releaser's release() call to its txn's socket write, and the
  // next holder's socket read (the delete event) to its acquire() returning.
  const split = new HandoffSplit(() => performance.now())
  const count = (k: string) => {
    calls[k] = (calls[k] ?? 0) + 1
  }
  const proto = grpc.GrpcConnection.prototype
  const unary = proto.unary
  proto.unary = function (this: unknown, path: string, ...rest: unknown[]) {
    count(path)
    return unary.call(this, path, ...rest)
  }
  const stream = proto.stream
  proto.stream = function (this: unknown, path: string) {
    count(`stream ${path}`)
    const s = stream.call(this, path)
    const write = s.write
    s.write = function (this: unknown, frame: Buffer) {
      count(`write ${path}`)
      return write.call(this, frame)
    }
    s.on('message', () => count(`message ${path}`))
    return s
  }
  // Socket writes and reads (chunks) of every connection of the process: each is a syscall and a wake-up.
  const net = await import('node:net')
  const socketWrite = net.Socket.prototype.write
  net.Socket.prototype.write = function (this: import('node:net').Socket, ...args: unknown[]) {
    count('socket write')
    split.wrote()
    const out = args[0]
    // A write of PING ACKs alone (9-byte header + 8-byte payload each, type 6, flag ACK).
    if (Buffer.isBuffer(out) && out.length % 17 === 0 && out[3] === 6 && out[4] === 1)
      count('socket write: PING ACKs alone')
    return (socketWrite as (...a: unknown[]) => boolean).apply(this, args)
  }
  // Timers and immediates set by anything in the process (the harness's own two sleeps per acquisition included).
  const realSetTimeout = globalThis.setTimeout
  globalThis.setTimeout = function (this: unknown, ...args: unknown[]) {
    count('timer set')
    // TIMER_SITES=1: by the caller's file and line too.
    if (process.env.TIMER_SITES !== undefined)
      count(`timer set at ${(new Error().stack?.split('\n')[2] ?? '').trim().replace(/^at .*\/(dist|bench)\//, '$1/')}`)
    return (realSetTimeout as (...a: unknown[]) => NodeJS.Timeout).apply(this, args)
  } as typeof setTimeout
  const realSetImmediate = globalThis.setImmediate
  globalThis.setImmediate = function (this: unknown, ...args: unknown[]) {
    count('immediate set')
    return (realSetImmediate as (...a: unknown[]) => NodeJS.Immediate).apply(this, args)
  } as typeof setImmediate
  // PINGs the server sent (each answered by an ACK, alone or in front of the next write).
  const pings = await import(pathToFileURL(resolve(dist as string, 'backends/etcd/wire/ping-acks.js')).href)
  const pingAdd = pings.PingAcks.prototype.add
  pings.PingAcks.prototype.add = function (this: unknown, ...args: unknown[]) {
    count('PING received')
    return pingAdd.apply(this, args)
  }
  // Chunks read: every socket read of the HTTP/2 sessions reaches their frame reader.
  const frames = await import(pathToFileURL(resolve(dist as string, 'backends/etcd/wire/h2-frames.js')).href)
  const framePush = frames.FrameReader.prototype.push
  frames.FrameReader.prototype.push = function (this: unknown, ...args: unknown[]) {
    count('socket read')
    split.read()
    return framePush.apply(this, args)
  }
  // FLOOR=etcd-line or etcd-go: that floor (lib/etcd-line-floor.ts, lib/etcd-go-mutex-floor.ts) instead of latchkey.
  const floorName = process.env.FLOOR
  const { acquire, close } = await openLockSide({
    dist: dist as string,
    url: `etcd://${new URL(ETCD).host}`,
    floor: floorName === 'etcd-line' || floorName === 'etcd-go' ? floorName : undefined,
    floorUrl: ETCD,
    namespace: 'cpuprof', // the key is new in each run
    key: key as string,
  })
  const warmEnd = performance.now() + 1_500
  const end = warmEnd + Number(secondsArg) * 1_000
  let acq = 0
  const holds: [number, number][] = []
  let cpu0 = process.cpuUsage()
  let calls0: Record<string, number> = {}
  let threads0 = threadTicks()
  const prof = process.env.PROF_DIR
  // HEAP_DIR=<dir>: a sampling allocation profile over the window (objects a GC collected since included).
  const heap = process.env.HEAP_DIR
  const session = prof === undefined && heap === undefined ? undefined : new Session()
  session?.connect()
  setTimeout(async () => {
    if (session !== undefined && prof !== undefined) {
      await session.post('Profiler.enable')
      await session.post('Profiler.start')
    }
    if (session !== undefined && heap !== undefined) {
      await session.post('HeapProfiler.enable')
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      })
    }
    cpu0 = process.cpuUsage()
    threads0 = threadTicks()
    calls0 = { ...calls }
  }, warmEnd - performance.now())
  const profiled = new Promise<void>((ok) =>
    setTimeout(async () => {
      if (session !== undefined && prof !== undefined) {
        const { profile } = await session.post('Profiler.stop')
        writeFileSync(`${prof}/${process.pid}.cpuprofile`, JSON.stringify(profile))
      }
      if (session !== undefined && heap !== undefined) {
        const { profile } = await session.post('HeapProfiler.stopSampling')
        writeFileSync(`${heap}/${process.pid}.heapprofile`, JSON.stringify(profile))
      }
      ok()
    }, end - performance.now()),
  )
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
        const at = performance.now()
        const counted = at >= warmEnd && at < end
        split.granted(at, counted)
        if (counted) acq++
        await sleep(1)
        const releasedAt = split.releasing()
        if (counted) holds.push([performance.timeOrigin + at, performance.timeOrigin + releasedAt])
        await held.release()
        await sleep(5)
      }
    }),
  )
  const used = process.cpuUsage(cpu0)
  // CPU by thread (clock ticks of 10 ms, Linux): the main thread against V8's and libuv's helpers.
  for (const [name, ticks] of threadTicks()) calls[`thread ticks ${name}`] = ticks - (threads0.get(name) ?? 0)
  await profiled
  const delta: Record<string, number> = {}
  for (const [k, v] of Object.entries(calls)) delta[k] = v - (calls0[k] ?? 0)
  process.send?.({
    acq,
    cpuMs: (used.user + used.system) / 1_000,
    systemMs: used.system / 1_000,
    calls: delta,
    holds,
    releaseToWrite: split.releaseToWrite,
    readToGrant: split.readToGrant,
  } satisfies Report)
  await close()
  process.exit(0)
}

async function parent(): Promise<void> {
  const [waiters = '10', procs = '4', seconds = '5', dist = 'packages/latchkey/dist'] = process.argv.slice(2)
  const p = Number(procs)
  const key = `k${Date.now()}`
  const bystanders = Array.from({ length: Number(process.env.BYSTANDERS ?? 0) }, () => {
    const c = fork(fileURLToPath(new URL('./lib/etcd-bystander.ts', import.meta.url)), [key, seconds, resolve(dist)], {
      execArgv: ['--import', 'tsx'],
    })
    return new Promise<{ cpuMs: number; messages: number }>((ok) => c.once('message', (m) => ok(m as never)))
  })
  const reports = await Promise.all(
    Array.from({ length: p }, (_, i) => {
      const n = Math.floor(Number(waiters) / p) + (i < Number(waiters) % p ? 1 : 0)
      const c = fork(fileURLToPath(import.meta.url), ['child', String(n), key, seconds, resolve(dist)], {
        // CHILD_FLAGS: more node/V8 flags for the children (e.g. --trace-deopt).
        execArgv: ['--import', 'tsx', ...(process.env.CHILD_FLAGS?.split(' ').filter(Boolean) ?? [])],
      })
      return new Promise<Report>((ok) => c.once('message', (m) => ok(m as Report)))
    }),
  )
  const acq = reports.reduce((s, r) => s + r.acq, 0)
  const cpu = reports.reduce((s, r) => s + r.cpuMs, 0)
  const system = reports.reduce((s, r) => s + r.systemMs, 0)
  const calls: Record<string, number> = {}
  for (const r of reports) for (const [k, v] of Object.entries(r.calls)) calls[k] = (calls[k] ?? 0) + v
  console.log(
    `${waiters} waiters x ${p} procs, ${seconds}s: ${acq} acq (${(acq / Number(seconds)).toFixed(0)}/s), client CPU ${(cpu / acq).toFixed(3)} ms/acq (system ${(system / acq).toFixed(3)})`,
  )
  // Handoff gap: from a holder's release() call to the next acquire() returning, in any process.
  const holds = reports.flatMap((r) => r.holds).sort((a, b) => a[0] - b[0])
  const gaps = holds
    .slice(1)
    .map((h, i) => h[0] - (holds[i] as [number, number])[1])
    .sort((a, b) => a - b)
  const pct = (q: number) => (gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))] ?? Number.NaN).toFixed(2)
  console.log(`  gap p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms`)
  const p50 = (xs: number[]) => ([...xs].sort((a, b) => a - b)[xs.length >> 1] ?? Number.NaN) * 1_000
  console.log(
    `  release() call to its socket write p50 ${p50(reports.flatMap((r) => r.releaseToWrite)).toFixed(0)} µs; last socket read to acquire() returning p50 ${p50(reports.flatMap((r) => r.readToGrant)).toFixed(0)} µs`,
  )
  for (const b of await Promise.all(bystanders))
    console.log(
      `  bystander: ${b.messages} watch responses, CPU ${b.cpuMs.toFixed(0)} ms, ${((b.cpuMs * 1_000) / Math.max(1, b.messages)).toFixed(0)} µs per response`,
    )
  for (const [k, v] of Object.entries(calls).sort()) console.log(`  ${k}: ${(v / acq).toFixed(2)} per acq`)
}

if (process.argv[2] === 'child') await child()
else await parent()
