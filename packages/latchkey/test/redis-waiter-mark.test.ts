/**
 * The uncontended release of a plain mutex in the latchkey layout (release-mutex.lua) reads only the string M, so a
 * waiter must show on M itself: its registration marks the holder's string with a leading `w`, and a handoff that
 * leaves another watcher writes the mark on the new holder's string (scripts/base.lua, KEYS[1]). On the shared
 * server, each release below comes from a backend that never saw the lock contended, which sends the short release
 * first: without the mark it would drop the lease and leave the waiter asleep.
 */
import { describe, expect, it } from 'vitest'
import type { RedisReleaseSubscription } from '../src/backends/redis/release-subscription.js'
import { backendRequest as request, tokenOf } from './support/backend-request.js'
import { eventually } from './support/eventually.js'
import { redisScope } from './support/redis-scope.js'

const { client, backend, lockName } = redisScope('waiter-mark')

/** A waiting try of `name` on a backend of its own, as the core makes it (subscribed first); refused. */
async function waitFor(name: string) {
  const b = backend()
  const wanted = request(name)
  const sub = b.subscribe(wanted) as RedisReleaseSubscription
  expect(await b.tryAcquire(wanted)).toMatchObject({ acquired: false })
  await eventually('the waiter is subscribed', () => sub.pending)
  sub.pending = false
  return { b, wanted, sub }
}

describe('a waiter marks the string of the mutex it waits for', () => {
  it('the mark survives renew and inspect, and the short release of the holder hands the lock over', async () => {
    const name = lockName()
    const m = `latchkey:{${name}}`
    const held = request(name)
    const t1 = tokenOf(await backend().tryAcquire(held))
    expect(await client.get(m)).toBe(`${t1}|0|${held.owner}`)
    const waiter = await waitFor(name)
    expect(await client.get(m)).toBe(`w${t1}|0|${held.owner}`)
    expect(await client.pttl(m)).toBeGreaterThan(9_000)
    expect(await backend().renew({ ...held, ttlMs: 30_000 })).toBe(true)
    expect(await client.get(m)).toBe(`w${t1}|0|${held.owner}`)
    expect((await backend().inspect(name)).holders).toMatchObject([{ owner: held.owner, token: t1 }])
    expect(await backend().release(held)).toBe(true)
    await eventually('the grant reaches the waiter', () => waiter.sub.granted !== undefined)
    expect(tokenOf(await waiter.b.tryAcquire(waiter.wanted))).toBeGreaterThan(t1)
    // Nobody else waits: the new holder's string carries no mark.
    expect(await client.get(m)).toMatch(new RegExp(`^\\d+\\|0\\|${waiter.wanted.owner}$`))
    expect(await backend().release(waiter.wanted)).toBe(true)
    expect(await client.exists(m)).toBe(0)
  })

  it('a handoff that leaves a watcher behind marks the new holder, whose short release hands over again', async () => {
    const name = lockName()
    const m = `latchkey:{${name}}`
    const held = request(name)
    tokenOf(await backend().tryAcquire(held))
    const first = await waitFor(name)
    const second = await waitFor(name)
    expect(await backend().release(held)).toBe(true)
    await eventually('the grant reaches the oldest waiter', () => first.sub.granted !== undefined)
    tokenOf(await first.b.tryAcquire(first.wanted))
    expect(await client.get(m)).toMatch(new RegExp(`^w\\d+\\|0\\|${first.wanted.owner}$`))
    expect(await backend().release(first.wanted)).toBe(true)
    await eventually('the grant reaches the second waiter', () => second.sub.granted !== undefined)
    tokenOf(await second.b.tryAcquire(second.wanted))
    expect(await client.get(m)).toMatch(new RegExp(`^\\d+\\|0\\|${second.wanted.owner}$`))
    expect(await backend().release(second.wanted)).toBe(true)
  })

  it('a grant of the free lock while a waiter is still registered is marked by that waiter’s next try', async () => {
    const name = lockName()
    const m = `latchkey:{${name}}`
    // The first holder's lease runs out: its waiter stays registered, told to retry when it would end.
    await backend().tryAcquire({ ...request(name), ttlMs: 150 })
    const waiter = await waitFor(name)
    await eventually('the first lease expired', async () => (await client.exists(m)) === 0)
    const next = request(name)
    const t2 = tokenOf(await backend().tryAcquire(next))
    expect(await client.get(m)).toBe(`${t2}|0|${next.owner}`)
    expect(await waiter.b.tryAcquire(waiter.wanted)).toMatchObject({ acquired: false })
    expect(await client.get(m)).toBe(`w${t2}|0|${next.owner}`)
    expect(await backend().release(next)).toBe(true)
    await eventually('the grant reaches the waiter', () => waiter.sub.granted !== undefined)
    tokenOf(await waiter.b.tryAcquire(waiter.wanted))
    expect(await backend().release(waiter.wanted)).toBe(true)
  })

  it('a reader waiting on a mutex marks it too, and the short release of the mutex wakes it', async () => {
    const name = lockName()
    const m = `latchkey:{${name}}`
    const held = request(name)
    const t1 = tokenOf(await backend().tryAcquire(held))
    const b = backend()
    const reader = request(name, 'read')
    const sub = b.subscribe(reader) as RedisReleaseSubscription
    expect(await b.tryAcquire(reader)).toMatchObject({ acquired: false })
    await eventually('the reader is subscribed', () => sub.pending)
    sub.pending = false
    expect(await client.get(m)).toBe(`w${t1}|0|${held.owner}`)
    expect(await backend().release(held)).toBe(true)
    await eventually('the release wakes the reader', () => sub.pending)
    tokenOf(await b.tryAcquire(reader))
    sub.close()
    expect(await b.release(reader)).toBe(true)
  })
})
