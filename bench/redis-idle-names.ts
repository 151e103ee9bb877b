/**
 * What a lock per order leaves in Redis: acquires and releases N distinct lock names (default 100 000)
 * through the Redis backend, 256 at a time, then counts the keys of those locks and the server's
 * `used_memory` right after and once the fencing counters' idle TTL has passed. Prints a table.
 *
 *   npx tsx bench/redis-idle-names.ts [names] [fenceIdleTtlMs]   (Redis from LATCHKEY_REDIS_URL)
 */
import { randomUUID } from 'node:crypto'
import { latchkeyLayout, redisBackend } from '../packages/latchkey/src/backends/redis/index.ts'
import { eventually } from '../packages/latchkey/test/support/eventually.ts'
import { ioredisClient, unlinkMatching } from '../packages/latchkey/test/support/redis-backend-module.ts'
import { churnNames, countKeys, usedMemory } from '../packages/latchkey/test/support/redis-idle-names.ts'

const names = Number(process.argv[2] ?? 100_000)
const idleMs = Number(process.argv[3] ?? 2_000)
const prefix = `bench-idle-${randomUUID().slice(0, 8)}:order:`
const patterns = latchkeyLayout.patternsFor(prefix)
const client = ioredisClient()
const admin = ioredisClient()
const backend = redisBackend({ client, fenceIdleTtlMs: idleMs })

try {
  const before = await usedMemory(admin)
  const started = performance.now()
  await churnNames(backend, prefix, names)
  const churnMs = performance.now() - started
  const keysAfter = await countKeys(admin, patterns)
  const memoryAfter = await usedMemory(admin)
  console.log(`${names} names acquired + released in ${Math.round(churnMs)} ms (fenceIdleTtlMs ${idleMs})`)
  console.log('| when | keys of those locks | used_memory | minus before | per name |')
  console.log('| --- | --- | --- | --- | --- |')
  console.log(`| before | 0 | ${before} | 0 | 0 |`)
  const perName = (bytes: number) => (bytes / names).toFixed(1)
  const row = (when: string, keys: number, memory: number) =>
    console.log(`| ${when} | ${keys} | ${memory} | ${memory - before} | ${perName(memory - before)} |`)
  row('right after release', keysAfter, memoryAfter)
  // 0: counters never expire (the behaviour before fenceIdleTtlMs), nothing more to wait for.
  if (idleMs > 0) {
    const idleStarted = performance.now()
    let keysIdle = -1
    await eventually(
      'no key left',
      async () => {
        keysIdle = await countKeys(admin, patterns)
        return keysIdle === 0
      },
      idleMs + 60_000,
      500,
    )
    row(`after the idle TTL (+${Math.round(performance.now() - idleStarted)} ms)`, keysIdle, await usedMemory(admin))
  }
} finally {
  await unlinkMatching(admin, patterns)
  await backend.close()
  await client.quit()
  await admin.quit()
}
