/**
 * Where latchkey's uncontended Redis lock+unlock at concurrency 1 spends its time, layer by layer, beside
 * redis-semaphore 5.8, against a private redis-server (one process, the contenders alternated round after round,
 * each on its own ioredis connection):
 *
 * - `fenced floor`: the least any fenced, owner-checked lock sends (INCR + SET NX PX in one script; GET + DEL);
 * - `latchkey's commands`: latchkey's own short scripts, keys and arguments through ioredis, no latchkey code: the
 *   step from the floor is what latchkey's scripts cost the server and their keys and arguments the client;
 * - `latchkey backend`: the Redis backend's tryAcquire + release (no core): the step is the backend's JavaScript;
 * - `latchkey`: `locks.mutex(key).acquire()` and `lease.release()`: the step is the core's JavaScript.
 *
 * Prints per contender pairs/s, its ratio to redis-semaphore within each round, and the client's user and system
 * CPU per pair (process.cpuUsage), median [min–max] over the rounds. The library comes from `dist` (npm run build
 * first); BEFORE_DIST=<another build's dist> adds that build's full stack as a contender.
 *
 *   npx tsx bench/redis-c1-layers.ts [rounds] [pairs per window]      (defaults 9 2500)
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { SCRIPTS } from '../packages/latchkey/dist/backends/redis/scripts/index.js'
import { startRedisServer } from '../packages/latchkey/test/support/redis-server-process.js'
import type { Contender } from './lib/contender.js'
import { type LatchkeyRedisLib, latchkeyRedisContender } from './lib/latchkey-redis-contender.js'
import { backendOnly, fencedFloor } from './lib/redis-layer-contenders.js'
import { openPeer } from './redis-peers.js'

const rounds = Number(process.argv[2] ?? 9)
const pairs = Number(process.argv[3] ?? 2_500)
const server = await startRedisServer()
const ns = `c1-layers-${randomUUID().slice(0, 8)}`

/** The EVALSHAs latchkey's backend sends for a free mutex (acquire-mutex.lua, release-mutex.lua), sent directly. */
function latchkeyCommands(): Contender {
  const client = new Redis(server.url)
  const { acquireMutex, releaseMutex } = SCRIPTS
  return {
    async acquire(key) {
      const m = `latchkey:{${ns}-commands:${key}}`
      const field = randomUUID()
      const token = await client.evalsha(acquireMutex.sha, 2, m, `${m}:fence`, field, '10000')
      if (token === 0) return undefined
      return { release: () => client.evalsha(releaseMutex.sha, 1, m, field) }
    },
    close: async () => {
      client.disconnect()
    },
  }
}

const contenders: Record<string, Contender> = {
  'fenced floor': fencedFloor(server.url, ns),
  "latchkey's commands": latchkeyCommands(),
  'latchkey backend': backendOnly(server.url, ns),
  latchkey: latchkeyRedisContender(server.url, `${ns}-latchkey`),
  'redis-semaphore': openPeer('redis-semaphore', server.url, `${ns}-sem`, 10_000),
}
const before = process.env.BEFORE_DIST
if (before !== undefined) {
  const lib = {
    createLocks: ((await import(`${before}/index.js`)) as LatchkeyRedisLib).createLocks,
    redisBackend: ((await import(`${before}/backends/redis/index.js`)) as LatchkeyRedisLib).redisBackend,
  }
  contenders['latchkey (BEFORE_DIST)'] = latchkeyRedisContender(server.url, `${ns}-before`, { lib })
}

const admin = new Redis(server.url)
for (const script of [SCRIPTS.acquireMutex, SCRIPTS.releaseMutex]) await admin.script('LOAD', script.source)
admin.disconnect()
for (const c of Object.values(contenders))
  for (let i = 0; i < 500; i++) await (await c.acquire('warm', 10_000))?.release()

interface Sample {
  rate: number
  user: number
  system: number
}
const samples = new Map(Object.keys(contenders).map((name) => [name, [] as Sample[]]))
for (let r = 0; r < rounds; r++) {
  const names = Object.keys(contenders)
  for (const name of r % 2 === 0 ? names : names.reverse()) {
    const c = contenders[name] as Contender
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    for (let i = 0; i < pairs; i++) {
      const held = await c.acquire('k', 10_000)
      if (held === undefined) throw new Error(`${name}: uncontended acquire failed`)
      await held.release()
    }
    const seconds = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    samples.get(name)?.push({ rate: pairs / seconds, user: cpu.user / pairs, system: cpu.system / pairs })
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number
const fmt = (xs: number[], digits = 0) =>
  `${median(xs).toFixed(digits)} [${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}]`
const peer = samples.get('redis-semaphore') ?? []
const load = (await import('node:os')).loadavg().map((l) => l.toFixed(1))
console.log(`\nconcurrency 1, ${rounds} rounds of ${pairs} pairs, load ${load.join(' ')}\n`)
console.log(
  '| contender | pairs/s | µs/pair | × redis-semaphore (per round) | client user µs/pair | client system µs/pair |',
)
console.log('| --- | --- | --- | --- | --- | --- |')
for (const [name, ss] of samples) {
  const rates = ss.map((s) => s.rate)
  console.log(
    `| ${name} | ${fmt(rates)} | ${(1e6 / median(rates)).toFixed(1)} | ${fmt(
      ss.map((s, i) => s.rate / (peer[i]?.rate ?? Number.NaN)),
      3,
    )} | ${fmt(
      ss.map((s) => s.user),
      1,
    )} | ${fmt(
      ss.map((s) => s.system),
      1,
    )} |`,
  )
}
for (const c of Object.values(contenders)) await c.close()
await server.dispose()
