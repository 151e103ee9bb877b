/**
 * One Redis handoff traced step by step, waiters in one process: latchkey (a build's dist) and the wake-one BLPOP
 * prototype, each driven by the loop of lib/modes.ts `contended` (hold 1 ms, think 5 ms) on a redis-server given by
 * URL. Every command the process sends is stamped when it is handed to ioredis and when its reply resolves, a few
 * backend methods when entered (release, tryAcquire, the notifier's handOver and dispatch, a subscription's fire),
 * and GC pauses. Per handoff (a release call, then another waiter's acquisition), the median µs from each step of
 * the chain to the next:
 *
 *   latchkey:    release entered, script sent, its reply carrying the grant, handOver, fire, acquire() returned
 *   proto-blpop: release script sent, the waiter's BLPOP reply, its SET sent, the SET reply, acquire() returned
 *
 * then every step's median µs after the release call, with the count of commands still unanswered when each was sent,
 * and a few raw handoffs. A copy of a dist with `globalThis.__mark?.('label')` lines added stamps any point of the
 * core (CHAIN=<comma-separated label prefixes> picks the chain). The host's load inflates every step: compare
 * builds in the same minute, one after the other.
 *
 *   npx tsx bench/redis-handoff-trace.ts <redis url> [waiters] [seconds] [dist]     (ONLY=latchkey|proto-blpop)
 */
import { PerformanceObserver } from 'node:perf_hooks'
import { Redis } from 'ioredis'
import type { Contender } from './lib/contender.js'
import { latchkeyRedisContender } from './lib/latchkey-redis-contender.js'
import { protoBlpop } from './lib/proto-blpop.js'
import { hostNow, sleep } from './lib/stats.js'

const [url = 'redis://127.0.0.1:6379', waitersArg, secondsArg, dist] = process.argv.slice(2)
const waiters = Number(waitersArg ?? 10)
const seconds = Number(secondsArg ?? 3)

/** A stamped event: [time µs, label]. */
type Mark = [number, string]
let marks: Mark[] = []
let tracing = false
const mark = (label: string) => {
  if (tracing) marks.push([hostNow() * 1000, label])
}

/** Wraps every command sent through ioredis (all clients of this process) to stamp send and reply. */
function stampCommands(): void {
  const proto = Redis.prototype as unknown as { sendCommand: (cmd: { name: string; args: unknown[] }) => unknown }
  const send = proto.sendCommand
  let inFlight = 0
  proto.sendCommand = function (this: unknown, cmd) {
    const name = cmd.name === 'evalsha' ? `evalsha:${String(cmd.args[0]).slice(0, 6)}` : cmd.name
    mark(`send ${name} inflight=${inFlight}`)
    inFlight++
    const p = (cmd as unknown as { promise: Promise<unknown> }).promise
    p.then(
      (r) => {
        inFlight--
        mark(`reply ${name} ${typeof r === 'string' ? r.slice(0, 2) : String(r).slice(0, 10)}`)
      },
      () => {
        inFlight--
        mark(`error ${name}`)
      },
    )
    return send.call(this, cmd)
  }
}

const LATCHKEY_CHAIN = 'enter release,send evalsha,reply evalsha:\\w+ g,enter handOver,enter fire,acquired'
const PROTO_CHAIN = 'send evalsha,reply blpop,send set,reply set OK,acquired'

async function run(name: string, c: Contender): Promise<void> {
  const key = `trace:${name}:${Date.now()}`
  const endAt = hostNow() + seconds * 1000
  const measureFrom = hostNow() + 800
  const acquisitions: { at: number; releasedAt: number }[] = []
  marks = []
  await Promise.all(
    Array.from({ length: waiters }, async (_, i) => {
      await sleep(i % 2)
      while (hostNow() < endAt) {
        const held = await c.acquire(key, Math.max(1, Math.ceil(endAt - hostNow()))).catch(() => undefined)
        const at = hostNow()
        if (held === undefined) continue
        mark(`acquired w${i}`)
        if (at >= endAt) {
          await held.release()
          break
        }
        tracing = at >= measureFrom
        await sleep(1)
        const releasedAt = hostNow()
        mark(`RELEASE w${i}`)
        if (at >= measureFrom) acquisitions.push({ at, releasedAt })
        await held.release()
        mark(`released w${i}`)
        await sleep(5)
      }
    }),
  )
  tracing = false
  // Steps of each handoff: from a RELEASE mark to the next `acquired` mark, each step the first mark of its kind.
  const steps = new Map<string, number[]>()
  const gaps: number[] = []
  const samples: string[] = []
  for (let i = 0; i < marks.length; i++) {
    const [t0, label] = marks[i] as Mark
    if (!label.startsWith('RELEASE')) continue
    const seen = new Set<string>()
    const trace: string[] = []
    for (let j = i + 1; j < marks.length; j++) {
      const [t, l] = marks[j] as Mark
      if (l.startsWith('RELEASE')) break
      trace.push(`${(t - t0).toFixed(0)} ${l}`)
      const step = l.replace(/ w\d+$/, '').replace(/ inflight=\d+/, '')
      if (seen.has(step)) continue
      seen.add(step)
      const list = steps.get(step) ?? []
      list.push(t - t0)
      steps.set(step, list)
      if (l.startsWith('acquired')) {
        gaps.push(t - t0)
        break
      }
    }
    if (samples.length < 4 && i > marks.length / 2) samples.push(trace.join(' | '))
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN
  // The chain of steps each handoff passes, in order; per step the median time since the step before it.
  const chain = (process.env.CHAIN ?? (name === 'latchkey' ? LATCHKEY_CHAIN : PROTO_CHAIN)).split(',')
  const deltas = chain.map(() => [] as number[])
  for (let i = 0; i < marks.length; i++) {
    const [t0, label] = marks[i] as Mark
    if (!label.startsWith('RELEASE')) continue
    let k = 0
    let prev = t0
    for (let j = i + 1; j < marks.length && k < chain.length; j++) {
      const [t, l] = marks[j] as Mark
      if (l.startsWith('RELEASE')) break
      if (!new RegExp(`^${chain[k]}`).test(l)) continue
      ;(deltas[k] as number[]).push(t - prev)
      prev = t
      k++
    }
  }
  console.log(`\n## ${name} chain (median µs since the step before):`)
  for (const [k, step] of chain.entries()) {
    console.log(
      `${median(deltas[k] as number[])
        .toFixed(1)
        .padStart(8)}  n=${String((deltas[k] as number[]).length).padStart(5)}  ${step}`,
    )
  }
  console.log(`\n## ${name}: ${acquisitions.length} acquisitions, gap p50 ${median(gaps).toFixed(1)} µs`)
  const rows = [...steps].filter(([, v]) => v.length >= gaps.length / 10).sort((a, b) => median(a[1]) - median(b[1]))
  for (const [k, v] of rows)
    console.log(`${median(v).toFixed(1).padStart(8)} µs  n=${String(v.length).padStart(5)}  ${k}`)
  for (const t of samples) console.log(`  e.g. ${t}`)
}

stampCommands()
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) mark(`gc ${e.duration.toFixed(2)}ms`)
}).observe({ entryTypes: ['gc'] })
;(globalThis as { __mark?: (l: string) => void }).__mark = mark
/** Stamps entry to a few methods of the latchkey build in `root` (its dist). */
async function stampMethods(root: string): Promise<void> {
  const wrap = (proto: Record<string, unknown>, method: string) => {
    const f = proto[method] as (...a: unknown[]) => unknown
    proto[method] = function (this: unknown, ...a: unknown[]) {
      mark(`enter ${method}`)
      return f.apply(this, a)
    }
  }
  const backend = await import(`${root}/backends/redis/redis-backend.js`)
  const notifier = await import(`${root}/backends/redis/release-notifier.js`)
  const sub = await import(`${root}/backends/redis/release-subscription.js`)
  for (const m of ['tryAcquire', 'release']) wrap(backend.RedisBackend.prototype, m)
  for (const m of ['handOver', 'dispatch']) wrap(notifier.ReleaseNotifier.prototype, m)
  wrap(sub.RedisReleaseSubscription.prototype, 'fire')
}
await stampMethods(dist ?? new URL('../packages/latchkey/dist', import.meta.url).pathname)
const ns = `trace${process.pid}`
const lib =
  dist === undefined
    ? undefined
    : await (async () => {
        const m = await import(`${dist}/index.js`)
        const r = await import(`${dist}/backends/redis/index.js`)
        return { createLocks: m.createLocks, redisBackend: r.redisBackend }
      })()
const contenders: [string, Contender][] = [
  ['latchkey', latchkeyRedisContender(url, ns, lib === undefined ? {} : { lib })],
  ['proto-blpop', protoBlpop(url, ns, 10_000)],
]
for (const [, c] of contenders) for (let i = 0; i < 20; i++) await (await c.acquire(`warm-${ns}`, 10_000))?.release()
for (const [name, c] of contenders) if (process.env.ONLY === undefined || process.env.ONLY === name) await run(name, c)
for (const [, c] of contenders) await c.close()
