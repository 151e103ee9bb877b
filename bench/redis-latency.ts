/**
 * Where an uncontended Redis lock+unlock spends its time, one operation at a time: raw SET NX PX / DEL, an
 * EVALSHA that does nothing, latchkey's two scripts called bare from ioredis, the same through latchkey, and
 * one PUBLISH to a subscriber of the same process (the floor of any notification). The cases run interleaved,
 * one of each per round, so the drift of this shared machine hits them alike. Prints medians and p90.
 *
 *   npx tsx bench/redis-latency.ts [seconds]      (Redis from LATCHKEY_REDIS_URL, default 127.0.0.1:6379)
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createLocks } from 'latchkey'
import { redisBackend } from 'latchkey/redis'
import { SCRIPTS } from '../packages/latchkey/src/backends/redis/scripts/index.ts'

const url = process.env.LATCHKEY_REDIS_URL ?? 'redis://127.0.0.1:6379'
const seconds = Number(process.argv[2] ?? 8)
const ns = `bench-latency-${randomUUID().slice(0, 8)}`
const client = new Redis(url)
const subscriber = new Redis(url)
const backend = redisBackend({ client })
const locks = createLocks({ backend, namespace: ns, ttlMs: 30_000 })

const keys = ['m', 'm', 'q', 'e', 'w', 'p', 'f'].map((k) => `${ns}:{bare}:${k}`)
const field = `${randomUUID()}:1`
const spec = 'mutex 30000 0 1 - 5000'
const noop = (await client.script('LOAD', 'return 1')) as string
for (const s of [SCRIPTS.acquire, SCRIPTS.release]) await client.script('LOAD', s.source)

let heard: (() => void) | undefined
subscriber.on('message', () => heard?.())
await subscriber.subscribe(`${ns}:ping`)

const cases: Record<string, () => Promise<unknown>> = {
  'SET NX PX (raw acquire)': () => client.set(`${ns}:raw`, 'v', 'PX', 30_000, 'NX'),
  'DEL (raw release)': () => client.del(`${ns}:raw`),
  'EVALSHA return 1, same 9 arguments': () => client.evalsha(noop, 7, ...keys, field, spec),
  'latchkey acquire script, bare': () => client.evalsha(SCRIPTS.acquire.sha, 7, ...keys, field, spec),
  'latchkey release script, bare': () => client.evalsha(SCRIPTS.release.sha, 7, ...keys, field, 'ch', '0'),
  'latchkey tryAcquire + release': async () => (await locks.mutex('k').tryAcquire())?.release(),
  'latchkey acquire({ waitMs }) + release': async () => (await locks.mutex('k').acquire({ waitMs: 1_000 })).release(),
  'PUBLISH, until its subscriber hears it': () =>
    new Promise<void>((resolve) => {
      heard = resolve
      void client.publish(`${ns}:ping`, 'x')
    }),
}

const samples = new Map(Object.keys(cases).map((name) => [name, [] as number[]]))
const end = performance.now() + seconds * 1_000
while (performance.now() < end) {
  for (const [name, run] of Object.entries(cases)) {
    const started = performance.now()
    await run()
    samples.get(name)?.push(performance.now() - started)
  }
}

const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(q * (sorted.length - 1))] ?? Number.NaN
}
const us = (ms: number): string => (ms * 1_000).toFixed(1)
const raw =
  quantile(samples.get('SET NX PX (raw acquire)') ?? [], 0.5) + quantile(samples.get('DEL (raw release)') ?? [], 0.5)
console.log(`| operation (${samples.get('DEL (raw release)')?.length} rounds) | p50 µs | p90 µs | raw pair ÷ this |`)
console.log('| --- | --- | --- | --- |')
for (const [name, xs] of samples) {
  const ratio = name.includes('+') ? (raw / quantile(xs, 0.5)).toFixed(3) : ''
  console.log(`| ${name} | ${us(quantile(xs, 0.5))} | ${us(quantile(xs, 0.9))} | ${ratio} |`)
}

await locks.close()
await backend.close()
// The fencing counter latchkey's lock left (it outlives the lock by design) goes too.
const left = await client.keys(`latchkey:{${ns}:*`)
await client.del(...keys, `${ns}:raw`, ...left)
client.disconnect()
subscriber.disconnect()
