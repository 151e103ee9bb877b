/**
 * A waiter's try on a mutex another owner holds as the string M (the latchkey layout), on the shared server: it
 * registers the same watch as the general rules (W in order of arrival, P with spec, expiry and wake channel) and
 * answers "held" with M's time to live, from acquire.lua's short contended path: without base.lua's TYPE, as MONITOR
 * shows the commands the script ran. Every waiter makes such a try per acquisition, and a release queues behind it.
 */
import { describe, expect, it } from 'vitest'
import type { RedisReleaseSubscription } from '../src/backends/redis/release-subscription.js'
import { backendRequest as request, tokenOf } from './support/backend-request.js'
import { eventually } from './support/eventually.js'
import { redisScope } from './support/redis-scope.js'

const { client, ownClient, backend, lockName } = redisScope('watch-registration')

/** The commands (lower case, with their arguments) the server runs on keys of lock `name` while `run` runs. */
async function commandsOn(name: string, run: () => Promise<unknown>): Promise<string[][]> {
  const monitor = await ownClient().monitor()
  const seen: string[][] = []
  const tag = `{${name}}`
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args.some((a) => a.includes(tag))) seen.push([(args[0] as string).toLowerCase(), ...args.slice(1)])
  })
  // MONITOR shows commands from when the server acknowledged it: a marker seen proves it is listening.
  const marker = `latchkey:${tag}:marker`
  await eventually('MONITOR is listening', async () => {
    await client.exists(marker)
    return seen.some((c) => c[1] === marker)
  })
  seen.length = 0
  await run()
  await client.exists(`${marker}:end`)
  await eventually('MONITOR saw the run', () => seen.some((c) => c[1] === `${marker}:end`))
  monitor.disconnect()
  return seen.filter((c) => !c[1]?.startsWith(marker))
}

describe('the Redis backend, a watcher of a mutex held as the string', () => {
  it('registers its watch with no TYPE, in order of arrival, and is told how long the holder has left', async () => {
    const name = lockName()
    const holder = backend(ownClient())
    const waiter = backend(ownClient())
    const held = request(name)
    tokenOf(await holder.tryAcquire(held))
    const first = request(name)
    const second = request(name)
    // Each try right after its subscription, as the core makes a waiting acquire's first try.
    const subs = [waiter.subscribe(first) as RedisReleaseSubscription]
    let reply: unknown
    const ran = await commandsOn(name, async () => {
      reply = await waiter.tryAcquire(first)
    })
    expect(reply).toMatchObject({ acquired: false })
    const retry = (reply as { retryAfterMs: number }).retryAfterMs
    expect(retry).toBeGreaterThan(9_000)
    expect(retry).toBeLessThanOrEqual(10_000)
    const names = ran.map((c) => c[0])
    expect(names).not.toContain('type')
    expect(names).toContain('zadd')
    // A second waiter: after the first in W; each spec names the waiter's process's wake channel.
    subs.push(waiter.subscribe(second) as RedisReleaseSubscription)
    expect(await waiter.tryAcquire(second)).toMatchObject({ acquired: false })
    const watchers = await client.zrange(`latchkey:{${name}}:watchers`, 0, -1)
    expect(watchers).toHaveLength(2)
    const specs = await client.hgetall(`latchkey:{${name}}:specs`)
    for (const w of watchers) expect(specs[w]).toMatch(/^mutex 10000 0 1 [fw] 5000 \d+ latchkey:wake:s:[\w-]+$/)
    // The release grants the first to arrive.
    expect(await holder.release(held)).toBe(true)
    await eventually('the first watcher is granted', () => subs[0]?.granted !== undefined)
    expect(subs[1]?.granted).toBeUndefined()
    for (const s of subs) s.close()
  })
})
