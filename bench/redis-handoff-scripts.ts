/**
 * Where a Redis handoff's time goes on the server, latchkey builds side by side: W waiters in this process take turns
 * on one lock (hold 1 ms, think 5 ms, as bench/redis-handoff.ts), and a private redis-server logs every command's
 * duration (SLOWLOG with a 0 µs threshold). Per build and round: the handoff gap p50 (an acquisition minus the previous
 * release call) and the p50 server time of the release script (the one on the gap's critical path) and of the
 * acquire script (a failed try registering its watcher); the wake-one BLPOP prototype (lib/proto-blpop.ts) beside
 * them, its release script in the release column. Rounds alternate the contenders; prints median [min-max].
 * Spaced 1-5 ms apart, the scripts run with cold caches on a loaded host: several times their back-to-back cost.
 *
 *   BEFORE_DIST=<another build's dist, under this repository> npx tsx bench/redis-handoff-scripts.ts
 *   (W=10 waiters, ROUNDS=6 by default; without BEFORE_DIST only this build)
 */
import { Redis } from 'ioredis'
import { startRedisServer } from '../packages/latchkey/test/support/redis-server-process.js'
import { type LatchkeyRedisLib, latchkeyRedisContender, THIS_BUILD } from './lib/latchkey-redis-contender.js'
import { protoBlpop } from './lib/proto-blpop.js'

const before = process.env.BEFORE_DIST
const libs: Record<string, LatchkeyRedisLib> = { after: THIS_BUILD }
if (before !== undefined) {
  libs.before = {
    createLocks: ((await import(`${before}/index.js`)) as LatchkeyRedisLib).createLocks,
    redisBackend: ((await import(`${before}/backends/redis/index.js`)) as LatchkeyRedisLib).redisBackend,
  }
}
const server = await startRedisServer()
const admin = new Redis(server.url)
const W = Number(process.env.W ?? 10)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const p50 = (l: number[]) => [...l].sort((a, b) => a - b)[l.length >> 1] as number
const results: Record<string, { gap: number[]; rel: number[]; acq: number[] }> = {}
async function cell(name: string, ms: number, round: number) {
  const lib = libs[name]
  const c =
    lib === undefined
      ? protoBlpop(server.url, `ho-proto-${round}`, 10_000)
      : latchkeyRedisContender(server.url, `ho-${name}-${round}`, { lib })
  const gaps: number[] = []
  let releasedAt = 0
  const worker = async (end: number) => {
    while (performance.now() < end) {
      const lease = await c.acquire('k', 10_000)
      if (lease === undefined) throw new Error(`${name} gave up waiting`)
      if (releasedAt > 0) gaps.push(performance.now() - releasedAt)
      await sleep(1)
      releasedAt = performance.now()
      await lease.release()
      await sleep(5)
    }
  }
  await Promise.all(Array.from({ length: W }, () => worker(performance.now() + 300)))
  releasedAt = 0
  gaps.length = 0
  await admin.slowlog('RESET')
  await Promise.all(Array.from({ length: W }, () => worker(performance.now() + ms)))
  const log = (await admin.slowlog('GET', 100000)) as [number, number, number, string[]][]
  const rel: number[] = []
  const acq: number[] = []
  for (const [, , us, args] of log) {
    if (String(args[0]).toLowerCase() !== 'evalsha') continue
    // latchkey: EVALSHA sha 7 <seven keys> then a release's four arguments (field channel publish wake), an
    // acquire's 2-3; a release's short scripts take 1 key (release-mutex.lua) or 5 (pass-mutex.lua), the short
    // acquire 2; proto-blpop's only script is its release.
    const keys = Number(args[2])
    const release = keys === 7 ? args.length >= 3 + 7 + 4 : keys === 1 || keys === 5
    ;(release || lib === undefined ? rel : acq).push(us)
  }
  results[name] ??= { gap: [], rel: [], acq: [] }
  const r = results[name]
  r.gap.push(p50(gaps))
  r.rel.push(p50(rel))
  r.acq.push(p50(acq))
  await c.close()
}
await admin.config('SET', 'slowlog-log-slower-than', '0')
await admin.config('SET', 'slowlog-max-len', '100000')
const rounds = Number(process.env.ROUNDS ?? 6)
const names = [...Object.keys(libs), 'proto-blpop']
for (let i = 0; i < rounds; i++) for (const n of i % 2 ? [...names].reverse() : names) await cell(n, 1500, i)
const fmt = (l: number[], d = 1) => `${p50(l).toFixed(d)} [${Math.min(...l).toFixed(d)}-${Math.max(...l).toFixed(d)}]`
const proto = results['proto-blpop']?.gap ?? []
for (const [n, r] of Object.entries(results)) {
  const ratio = r.gap.map((g, round) => g / (proto[round] ?? Number.NaN))
  const acq = r.acq.filter((us) => us !== undefined)
  console.log(
    `${n}: gap p50 ms ${fmt(r.gap, 3)}, x proto-blpop per round ${fmt(ratio, 2)}; release script µs p50 ${fmt(r.rel)}; acquire script µs p50 ${acq.length > 0 ? fmt(acq) : '-'}`,
  )
}
console.log(
  `load ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
)
admin.disconnect()
await server.dispose()
