/**
 * One contender's uncontended lock+unlock loop at concurrency 1 against a private redis-server, for a CPU profile of
 * the client (where each microsecond of a pair goes):
 *
 *   PROFILE=<file.cpuprofile> npx tsx bench/redis-c1-profile.ts <contender> [pairs]
 *   node bench/lib/cpu-profile-summary.mjs <file.cpuprofile> [pairs]
 *
 * The profile covers the measured loop only (inspector session started after the warm-up).
 *
 * contender: latchkey, redlock5, redis-semaphore, raw or floor (fenced floor of redis-uncontended.ts). Prints pairs/s
 * and client CPU µs per pair (process.cpuUsage).
 */
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { startRedisServer } from '../packages/latchkey/test/support/redis-server-process.js'
import { latchkeyRedisContender } from './lib/latchkey-redis-contender.js'
import { openPeer, type PeerName } from './redis-peers.js'

const [which = 'latchkey', pairsArg] = process.argv.slice(2)
const pairs = Number(pairsArg ?? 20_000)
const server = await startRedisServer()

const c =
  which === 'latchkey'
    ? latchkeyRedisContender(server.url, 'prof')
    : openPeer(which as PeerName, server.url, 'prof', 10_000)
for (let i = 0; i < 2_000; i++) await (await c.acquire('warm', 10_000))?.release()
const session = process.env.PROFILE === undefined ? undefined : new Session()
if (session !== undefined) {
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 50 })
  await session.post('Profiler.start')
}
const cpu0 = process.cpuUsage()
const t0 = performance.now()
for (let i = 0; i < pairs; i++) {
  const held = await c.acquire('k', 10_000)
  if (held === undefined) throw new Error('uncontended acquire failed')
  await held.release()
}
const seconds = (performance.now() - t0) / 1000
const cpu = process.cpuUsage(cpu0)
if (session !== undefined) {
  const { profile } = await session.post('Profiler.stop')
  writeFileSync(process.env.PROFILE as string, JSON.stringify(profile))
  session.disconnect()
}
console.log(
  `${which}: ${(pairs / seconds).toFixed(0)} pairs/s, client CPU ${((cpu.user + cpu.system) / pairs).toFixed(1)} µs/pair (user ${(cpu.user / pairs).toFixed(1)}, system ${(cpu.system / pairs).toFixed(1)})`,
)
await c.close()
await server.dispose()
