/**
 * Where an uncontended Redis lock+unlock goes, latchkey beside redis-semaphore 5.8 and raw SET NX PX + DEL, in one
 * process against a private redis-server: short windows of each contender, interleaved round after round so the
 * drift of a shared machine hits them alike. Per contender: pairs/s, client CPU per pair (process.cpuUsage over
 * the window) and the server's time per script call (INFO commandstats, reset before each window). Prints medians
 * [min-max] over the rounds. The library comes from `dist` (npm run build first).
 *
 *   npx tsx bench/redis-uncontended.ts [rounds] [windowMs] [concurrency...]     (defaults 21 250 1 50)
 *
 * BEFORE_DIST=<another build's dist directory> adds that build as a contender (before/after a change, same run);
 * REDLOCK=0 drops redlock 5.0-beta (the best peer at concurrency 1 in the matrix). REDISSON=1 adds the Redisson
 * layout; LAYERS=1 adds latchkey's backend driven directly (tryAcquire + release of the backend contract, no core),
 * so the core's share of the client CPU is the difference. `fenced floor` is the least any fenced, owner-checked
 * Redis lock sends: one script that takes a token and SET NX PX, one that deletes the key if it still holds that
 * token.
 */
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Redis } from 'ioredis'
import { startRedisServer } from '../packages/latchkey/test/support/redis-server-process.js'
import type { Contender } from './lib/contender.js'
import { type LatchkeyRedisLib, latchkeyRedisContender } from './lib/latchkey-redis-contender.js'
import { backendOnly, fencedFloor } from './lib/redis-layer-contenders.js'
import { openPeer } from './redis-peers.js'

const [roundsArg, windowArg, ...concArgs] = process.argv.slice(2)
const rounds = Number(roundsArg ?? 21)
const windowMs = Number(windowArg ?? 250)
const concurrencies = concArgs.length > 0 ? concArgs.map(Number) : [1, 50]
// The other build is loaded before the private redis-server starts: a wrong path must not leave a server behind.
const before = process.env.BEFORE_DIST
const beforeLib: LatchkeyRedisLib | undefined =
  before === undefined
    ? undefined
    : {
        createLocks: ((await import(`${before}/index.js`)) as LatchkeyRedisLib).createLocks,
        redisBackend: ((await import(`${before}/backends/redis/index.js`)) as LatchkeyRedisLib).redisBackend,
      }
const server = await startRedisServer()
const admin = new Redis(server.url)
const ns = `bench-unc-${randomUUID().slice(0, 8)}`
const serverPid = Number(/process_id:(\d+)/.exec((await admin.info('server')) as string)?.[1])
/** The redis-server's CPU time (µs, in clock ticks of 10 ms): parsing and replies too, which commandstats omits. */
function serverCpuUs(): number {
  const fields = (readFileSync(`/proc/${serverPid}/stat`, 'utf8').split(') ')[1] as string).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

const contenders: Record<string, Contender> = {
  raw: openPeer('raw', server.url, `${ns}-raw`, 10_000),
  'fenced floor': fencedFloor(server.url, ns),
  latchkey: latchkeyRedisContender(server.url, `${ns}-latchkey`, { layout: 'latchkey' }),
  'redis-semaphore': openPeer('redis-semaphore', server.url, `${ns}-sem`, 10_000),
}
// redlock 5.0-beta: the best peer at concurrency 1 in the matrix (no fencing token; one SET NX PX, a script to release).
if (process.env.REDLOCK !== '0') contenders['redlock 5.0-beta'] = openPeer('redlock5', server.url, `${ns}-rl5`, 10_000)
if (process.env.LAYERS === '1') contenders['latchkey backend, no core'] = backendOnly(server.url, ns)
if (process.env.REDISSON === '1')
  contenders['latchkey redisson layout'] = latchkeyRedisContender(server.url, `${ns}-redisson`, { layout: 'redisson' })
if (beforeLib !== undefined) {
  contenders['latchkey (BEFORE_DIST)'] = latchkeyRedisContender(server.url, `${ns}-before`, {
    lib: beforeLib,
    layout: 'latchkey',
  })
}

/** usec_per_call and calls of each command since the last reset. */
async function commandStats(): Promise<Map<string, { calls: number; usec: number }>> {
  const info = (await admin.info('commandstats')) as string
  const out = new Map<string, { calls: number; usec: number }>()
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+),usec=(\d+)/gm)) {
    out.set(m[1] as string, { calls: Number(m[2]), usec: Number(m[3]) })
  }
  return out
}

interface Sample {
  pairs: number
  cpuUsPerPair: number
  serverUsPerPair: number
  serverCpuUsPerPair: number
  perCommand: string
}

async function window(c: Contender, concurrency: number, tag: string): Promise<Sample> {
  await admin.config('RESETSTAT')
  const end = performance.now() + windowMs
  let pairs = 0
  const cpu0 = process.cpuUsage()
  const server0 = serverCpuUs()
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const key = `${tag}:u${i}`
      while (performance.now() < end) {
        const held = await c.acquire(key, 10_000)
        if (held === undefined) throw new Error(`uncontended acquire of ${key} failed`)
        await held.release()
        pairs++
      }
    }),
  )
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  const serverCpu = serverCpuUs() - server0
  const stats = await commandStats()
  stats.delete('config')
  let usec = 0
  for (const s of stats.values()) usec += s.usec
  const perCommand = [...stats]
    .map(([name, s]) => `${name} ${(s.usec / s.calls).toFixed(2)} µs × ${(s.calls / pairs).toFixed(2)}`)
    .join(', ')
  return {
    pairs: pairs / seconds,
    cpuUsPerPair: (cpu.user + cpu.system) / pairs,
    serverUsPerPair: usec / pairs,
    serverCpuUsPerPair: serverCpu / pairs,
    perCommand,
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const fmt = (xs: number[], digits = 0) =>
  `${median(xs).toFixed(digits)} [${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}]`

// Warm-up: scripts loaded, JIT warm.
for (const c of Object.values(contenders))
  for (let i = 0; i < 200; i++) await (await c.acquire('warm', 10_000))?.release()

for (const concurrency of concurrencies) {
  const samples = new Map(Object.keys(contenders).map((n) => [n, [] as Sample[]]))
  for (let r = 0; r < rounds; r++) {
    const names = Object.keys(contenders)
    const order = r % 2 === 0 ? names : [...names].reverse()
    for (const name of order) samples.get(name)?.push(await window(contenders[name] as Contender, concurrency, name))
  }
  const base = median((samples.get('redis-semaphore') ?? []).map((s) => s.pairs))
  console.log(
    `\n## concurrency ${concurrency}: median [min–max] of ${rounds} rounds of ${windowMs} ms, load ${(
      await import('node:os')
    )
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  )
  console.log(
    '| contender | pairs/s | × redis-semaphore (medians) | × redis-semaphore, per round: median [min–max] | client CPU µs/pair | server CPU µs/pair | commandstats µs/pair | commandstats µs per call × calls per pair (last round) |',
  )
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
  // The ratio within each round (the two windows of a round are next to each other, so they saw about the same
  // load): steadier than the ratio of the medians when the machine's load swings from round to round.
  const peer = samples.get('redis-semaphore') ?? []
  for (const [name, ss] of samples) {
    const pairs = ss.map((s) => s.pairs)
    const perRound = ss.map((s, i) => s.pairs / (peer[i]?.pairs ?? Number.NaN))
    console.log(
      `| ${name} | ${fmt(pairs)} | ${(median(pairs) / base).toFixed(3)} | ${fmt(perRound, 3)} | ${fmt(ss.map((s) => s.cpuUsPerPair))} | ${fmt(ss.map((s) => s.serverCpuUsPerPair))} | ${fmt(
        ss.map((s) => s.serverUsPerPair),
        1,
      )} | ${ss.at(-1)?.perCommand} |`,
    )
  }
}

for (const c of Object.values(contenders)) await c.close()
admin.disconnect()
await server.dispose()
