/**
 * What latchkey's own JavaScript costs per uncontended Redis lock+unlock, without the network: the backend is handed
 * a fake ioredis client whose EVALSHA answers at once (a token for the short acquire, 1 for the short release), so
 * the CPU per pair is the core and the backend alone, not ioredis, the socket or Redis. Rounds alternate the
 * contenders; prints the median [min–max] CPU µs per pair. The library comes from `dist` (npm run build first).
 *
 *   npx tsx bench/redis-js-overhead.ts [rounds] [pairs per round] [concurrency]     (defaults 5 100000 50)
 *
 * To compare builds, run it once per build: with two builds loaded in one process the second measured twice its own
 * figure in a process of its own, so the two do not compare within one process.
 */
import { createLocks } from 'latchkey'
import { redisBackend } from 'latchkey/redis'
import { uncontendedMutexRequest } from './lib/redis-layer-contenders.js'

const [roundsArg, pairsArg, concArg] = process.argv.slice(2)
const rounds = Number(roundsArg ?? 5)
const pairs = Number(pairsArg ?? 100_000)
const concurrency = Number(concArg ?? 50)

type Lib = { createLocks: typeof createLocks; redisBackend: typeof redisBackend }

/** An object ioredis-shaped enough for the backend; the short acquire sends 2 keys, the short release 1. */
function fakeClient(tokenReply: (n: number) => unknown) {
  let n = 0
  const subscriber = { on() {}, subscribe: async () => {}, unsubscribe: async () => {}, disconnect() {} }
  return {
    status: 'ready',
    options: { host: '127.0.0.1', port: 1 },
    evalsha: (_sha: string, numKeys: number) => Promise.resolve(numKeys === 2 ? tokenReply(++n) : 1),
    eval: () => Promise.reject(new Error('the fake client has every script')),
    duplicate: () => subscriber,
    on() {},
  }
}

type Run = (count: number) => Promise<void>

function contender(lib: Lib, tokenReply: (n: number) => unknown, layer: 'core' | 'backend'): Run {
  const backend = lib.redisBackend({ client: fakeClient(tokenReply) as never })
  const locks = lib.createLocks({ backend, namespace: 'js-overhead', ttlMs: 10_000 })
  return (count) =>
    Promise.all(
      Array.from({ length: concurrency }, async (_, i) => {
        for (let j = 0; j < count / concurrency; j++) {
          if (layer === 'core') {
            const lease = await locks.mutex(`u${i}`).acquire({ waitMs: 10_000 })
            await lease.release()
            continue
          }
          // The backend contract's calls as the core makes them for an uncontended acquire (subscribed, first try).
          const request = uncontendedMutexRequest(`js-overhead:u${i}`)
          const sub = backend.subscribe?.(request)
          await backend.tryAcquire(request)
          sub?.close()
          await backend.release(request)
        }
      }),
    ).then(() => undefined)
}

const current: Lib = { createLocks, redisBackend }
const contenders: Record<string, Run> = {
  'latchkey (core + backend)': contender(current, (n) => n, 'core'),
  'latchkey backend alone': contender(current, (n) => n, 'backend'),
}
for (const run of Object.values(contenders)) await run(20_000)
const samples = new Map(Object.keys(contenders).map((name) => [name, [] as number[]]))
for (let r = 0; r < rounds; r++) {
  const names = Object.keys(contenders)
  for (const name of r % 2 === 0 ? names : names.reverse()) {
    const cpu0 = process.cpuUsage()
    await (contenders[name] as Run)(pairs)
    const cpu = process.cpuUsage(cpu0)
    samples.get(name)?.push((cpu.user + cpu.system) / pairs)
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
console.log(`| contender | CPU µs per pair, median [min–max] of ${rounds} rounds of ${pairs} |\n| --- | --- |`)
for (const [name, xs] of samples) {
  console.log(`| ${name} | ${median(xs).toFixed(2)} [${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}] |`)
}
