/**
 * Where a Redis handoff's time goes on the server, latchkey builds side by side: W waiters in this process take turns
 * on one lock (hold 1 ms, think 5 ms, as bench/redis-handoff.ts), and a private redis-server logs every command's
 * duration (SLOWLOG with a 0 µs threshold). Per build and round: the handoff gap p50 (an acquisition minus the previous
 * release call) and the p50 server time of the release script (the one on the gap's critical path) and of the
 * acquire script (a failed try registering its watcher). Rounds alternate the builds; prints median [min-max].
 * Spaced 1-5 ms apart, the scripts run with cold caches on a loaded host: several times their back-to-back cost.
 *
 *   BEFORE_DIST=<another build's dist, under this repository> npx tsx bench/redis-handoff-scripts.ts
 *   (W=10 waiters, ROUNDS=6 by default; without BEFORE_DIST only this build)
 */
import { Redis } from 'ioredis'
import { createLocks as cl } from 'latchkey'
import { redisBackend as rb } from 'latchkey/redis'
import { startRedisServer } from '../packages/latchkey/test/support/redis-server-process.js'

type Lib = { createLocks: typeof cl; redisBackend: typeof rb }
const before = process.env.BEFORE_DIST
const libs: Record<string, Lib> = { after: { createLocks: cl, redisBackend: rb } }
if (before !== undefined) {
  libs.before = {
    createLocks: ((await import(`${before}/index.js`)) as Lib).createLocks,
    redisBackend: ((await import(`${before}/backends/redis/index.js`)) as Lib).redisBackend,
  }
}
const server = await startRedisServer()
const admin = new Redis(server.url)
const W = Number(process.env.W ?? 10)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const p50 = (l: number[]) => [...l].sort((a, b) => a - b)[l.length >> 1] as number
const results: Record<string, { gap: number[]; rel: number[]; acq: number[] }> = {}
async function cell(name: string, ms: number, round: number) {
  const client = new Redis(server.url)
  const lib = libs[name] as Lib
  const backend = lib.redisBackend({ client })
  const locks = lib.createLocks({ backend, namespace: `ho-${name}-${round}`, ttlMs: 10_000 })
  const gaps: number[] = []
  let releasedAt = 0
  const worker = async (end: number) => {
    while (performance.now() < end) {
      const lease = await locks.mutex('k').acquire({ waitMs: 10_000 })
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
    // EVALSHA sha 7 <seven keys> then a release's four arguments (field channel publish wake), an acquire's 2-3.
    ;(args.length >= 3 + 7 + 4 ? rel : acq).push(us)
  }
  results[name] ??= { gap: [], rel: [], acq: [] }
  const r = results[name]
  r.gap.push(p50(gaps))
  r.rel.push(p50(rel))
  r.acq.push(p50(acq))
  await locks.close()
  await backend.close()
  client.disconnect()
}
await admin.config('SET', 'slowlog-log-slower-than', '0')
await admin.config('SET', 'slowlog-max-len', '100000')
const rounds = Number(process.env.ROUNDS ?? 6)
const names = Object.keys(libs)
for (let i = 0; i < rounds; i++) for (const n of i % 2 ? [...names].reverse() : names) await cell(n, 1500, i)
const fmt = (l: number[], d = 1) => `${p50(l).toFixed(d)} [${Math.min(...l).toFixed(d)}-${Math.max(...l).toFixed(d)}]`
for (const [n, r] of Object.entries(results))
  console.log(
    `${n}: gap p50 ms ${fmt(r.gap, 3)}; release script µs p50 ${fmt(r.rel)}; acquire script µs p50 ${fmt(r.acq)}`,
  )
console.log(
  `load ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
)
admin.disconnect()
await server.dispose()
