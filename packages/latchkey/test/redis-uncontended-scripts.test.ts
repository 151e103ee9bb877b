/**
 * Which scripts the Redis backend sends for a mutex in the latchkey layout, on the shared server: the short
 * acquire-mutex.lua / release-mutex.lua while the lock is free and nobody waits, the full scripts when the short ones
 * find the lock held or waited for (in the same call, so no try and no handoff is lost), and once the process has seen
 * the lock contended the full acquire and the short release that hands the lock over (pass-mutex.lua), with the full
 * release behind it when that is not the plain case.
 */
import { describe, expect, it } from 'vitest'
import type { RedisBackend } from '../src/backends/redis/index.js'
import type { RedisReleaseSubscription } from '../src/backends/redis/release-subscription.js'
import { SCRIPTS } from '../src/backends/redis/scripts/index.js'
import { backendRequest as request, tokenOf } from './support/backend-request.js'
import { eventually } from './support/eventually.js'
import { redisScope } from './support/redis-scope.js'

const { client, ownClient, backend, lockName } = redisScope('short-scripts')
const scriptBySha = new Map(Object.values(SCRIPTS).map((s) => [s.sha, s.name]))

/** A backend (another process, as far as Redis can tell) whose scripts are logged by name, in order. */
function loggedBackend(): { b: RedisBackend; log: string[] } {
  const own = ownClient()
  const log: string[] = []
  // ioredis sends a command again through sendCommand when it leaves the offline queue: count each once.
  const seen = new WeakSet<object>()
  const send = own.sendCommand.bind(own)
  own.sendCommand = ((...args: Parameters<typeof send>) => {
    const [command] = args as unknown as [{ name: string; args: unknown[] }]
    // EVALSHA only: the EVAL after a NOSCRIPT (a server that had not seen the script yet) is the same call.
    if (command.name === 'evalsha' && !seen.has(command))
      log.push(scriptBySha.get(String(command.args[0])) ?? 'another script')
    seen.add(command)
    return send(...args)
  }) as typeof own.sendCommand
  return { b: backend(own), log }
}

describe('the Redis backend, a mutex in the latchkey layout', () => {
  it('a free lock nobody waits for is taken and released by the short scripts alone, with fencing tokens that increase', async () => {
    const { b, log } = loggedBackend()
    const name = lockName()
    const first = request(name)
    const t1 = tokenOf(await b.tryAcquire(first))
    expect(await b.release(first)).toBe(true)
    const second = request(name)
    const t2 = tokenOf(await b.tryAcquire(second))
    expect(t2).toBeGreaterThan(t1)
    // The owner is checked: another owner's release, and a second release, drop nothing.
    expect(await b.release(request(name))).toBe(false)
    expect(await b.release(second)).toBe(true)
    expect(await b.release(second)).toBe(false)
    expect(log).toEqual([
      'acquireMutex',
      'releaseMutex',
      'acquireMutex',
      'releaseMutex',
      'releaseMutex',
      'releaseMutex',
    ])
    expect(await client.exists(`latchkey:{${name}}`)).toBe(0)
  })

  it('a held lock found by the short acquire is waited for through the full script in the same try, and the release the short script cannot do hands it over', async () => {
    const holder = loggedBackend()
    const waiter = loggedBackend()
    const name = lockName()
    const held = request(name)
    const t1 = tokenOf(await holder.b.tryAcquire(held))
    // A waiting try, as the core makes it: subscribed first.
    const wanted = request(name)
    const sub = waiter.b.subscribe(wanted) as RedisReleaseSubscription
    expect(await waiter.b.tryAcquire(wanted)).toMatchObject({ acquired: false })
    expect(waiter.log).toEqual(['acquireMutex', 'acquire'])
    await eventually('the waiter is subscribed', () => sub.pending)
    sub.pending = false
    // The holder's process never saw the lock contended: its short release finds the watcher and leaves the
    // release to pass-mutex.lua, which grants the lock to the watcher and tells it.
    expect(await holder.b.release(held)).toBe(true)
    expect(holder.log).toEqual(['acquireMutex', 'releaseMutex', 'passMutex'])
    await eventually('the grant reaches the waiter', () => sub.granted !== undefined)
    const t2 = tokenOf(await waiter.b.tryAcquire(wanted))
    expect(t2).toBeGreaterThan(t1)
    sub.close()
    // The waiter's process has seen the lock contended: its next release and tries go straight to pass-mutex.lua
    // and the full acquire.
    expect(await waiter.b.release(wanted)).toBe(true)
    const again = request(name)
    tokenOf(await waiter.b.tryAcquire(again))
    expect(await waiter.b.release(again)).toBe(true)
    expect(await waiter.b.release(again)).toBe(false)
    expect(waiter.log).toEqual(['acquireMutex', 'acquire', 'passMutex', 'acquire', 'passMutex', 'passMutex'])
    expect(await client.exists(`latchkey:{${name}}`)).toBe(0)
  })

  it('a contended release whose oldest watcher is no longer live leaves the handoff to the full release, which passes it on', async () => {
    const holder = loggedBackend()
    const waiter = loggedBackend()
    const name = lockName()
    const held = request(name)
    tokenOf(await holder.b.tryAcquire(held))
    const gone = request(name)
    const goneSub = waiter.b.subscribe(gone) as RedisReleaseSubscription
    expect(await waiter.b.tryAcquire(gone)).toMatchObject({ acquired: false })
    const wanted = request(name)
    const sub = waiter.b.subscribe(wanted) as RedisReleaseSubscription
    expect(await waiter.b.tryAcquire(wanted)).toMatchObject({ acquired: false })
    // The first watcher's registration ran out (a crashed process): its expiry, in its spec, is in the past.
    const specs = `latchkey:{${name}}:specs`
    const goneField = (await client.zrange(`latchkey:{${name}}:watchers`, 0, 0))[0] as string
    const spec = (await client.hget(specs, goneField)) as string
    await client.hset(specs, goneField, spec.replace(/ \d+ (\S+)$/, ' 1 $1'))
    goneSub.close()
    // Seen contended by the holder's process now (its short acquire found it free, its release did not).
    expect(await holder.b.release(held)).toBe(true)
    expect(holder.log).toEqual(['acquireMutex', 'releaseMutex', 'passMutex', 'release'])
    await eventually('the grant reaches the live watcher', () => sub.granted !== undefined)
    tokenOf(await waiter.b.tryAcquire(wanted))
    sub.close()
    expect(await waiter.b.release(wanted)).toBe(true)
  })

  it('a lease past its expiry is not released by the short script while its lock-delay keeps the lock', async () => {
    const { b, log } = loggedBackend()
    const name = lockName()
    const short = { ...request(name), ttlMs: 40, lockDelayMs: 5_000 }
    await b.tryAcquire(short)
    // The key lives ttlMs + lockDelayMs; under lockDelayMs left, the lease itself has expired.
    await eventually('the lease expired', async () => (await client.pttl(`latchkey:{${name}}`)) < 4_990)
    expect(await b.release(short)).toBe(false)
    expect(await client.exists(`latchkey:{${name}}`)).toBe(1)
    expect(log).toEqual(['acquireMutex', 'releaseMutex'])
  })
})
