/**
 * The Redis release handoff, driven through the backend contract on the shared server: a release grants the
 * lock to the oldest mutex/semaphore watcher itself, the watcher takes it from the message (or, without the
 * message, from its next try), and a watcher that gives up passes an untaken grant on.
 */
import { describe, expect, it } from 'vitest'
import type { AcquireRequest, LockKind } from '../src/backend/types.js'
import { type RedisBackend, redisBackend } from '../src/backends/redis/index.js'
import type { RedisReleaseSubscription } from '../src/backends/redis/release-subscription.js'
import { backendRequest as request, tokenOf } from './support/backend-request.js'
import { eventually } from './support/eventually.js'
import { redisScope } from './support/redis-scope.js'

const scope = redisScope('handoff')
const { client, lockName } = scope
/** A backend on the file's shared client. */
const backend = (): RedisBackend => scope.backend(client)

/** A backend on a client of its own whose commands are counted. */
function countedBackend(): { b: RedisBackend; commands: () => number } {
  const own = scope.ownClient()
  let commands = 0
  const send = own.sendCommand.bind(own)
  own.sendCommand = ((...args: Parameters<typeof send>) => {
    commands++
    return send(...args)
  }) as typeof own.sendCommand
  return { b: scope.backend(own), commands: () => commands }
}

/** A fresh lock name held through `b1`, with two more backends (other processes) to wait on it. */
async function heldByFirst(kind: LockKind = 'mutex', permits = 1) {
  const name = lockName()
  const [b1, b2, b3] = [backend(), backend(), backend()]
  const holder = request(name, kind, permits)
  await b1.tryAcquire(holder)
  return { name, b1, b2, b3, holder }
}

/** A waiting try: subscribed first, as the core does before the first try of a waiting acquire. */
async function waitingTry(b: RedisBackend, req: AcquireRequest) {
  const sub = b.subscribe(req) as RedisReleaseSubscription
  const result = await b.tryAcquire(req)
  return { sub, result }
}

/** Resolves once the SUBSCRIBE of each of `waits` was acknowledged, which wakes each once (`pending`). */
const subscribed = (...waits: { sub: unknown }[]) =>
  eventually('the channels are subscribed', () => waits.every((w) => (w.sub as RedisReleaseSubscription).pending))

describe('redis release handoff', () => {
  it('a release grants the oldest watcher, which takes the lease from the message without a round trip', async () => {
    const name = lockName()
    const counted = countedBackend()
    const [b1, b2, b3] = [backend(), counted.b, backend()]
    const holder = request(name)
    const first = tokenOf(await b1.tryAcquire(holder))
    const a = request(name)
    const b = request(name)
    const waitA = await waitingTry(b2, a)
    const waitB = await waitingTry(b3, b)
    expect(waitA.result.acquired).toBe(false)
    expect(waitB.result.acquired).toBe(false)
    await subscribed(waitA, waitB)
    // Each subscription was woken once when its SUBSCRIBE was acknowledged (a release before it would have
    // gone unseen); take those wakes, so the waits below return on the release's message.
    await waitA.sub.wait(1)
    await waitB.sub.wait(1)
    // B's process hears nothing of A's grant (it goes to the wake channel of A's process alone).
    const heardByB: string[] = []
    const notifierB = (b3 as unknown as { notifier: { dispatch(c: string, m: string): void } }).notifier
    const dispatchB = notifierB.dispatch.bind(notifierB)
    notifierB.dispatch = (c, m) => {
      heardByB.push(m)
      dispatchB(c, m)
    }
    expect(await b1.release(holder)).toBe(true)
    // The lock is A's before A asks again: a newcomer is refused.
    expect((await b1.tryAcquire(request(name))).acquired).toBe(false)
    await waitA.sub.wait(2_000)
    const sent = counted.commands()
    const took = await b2.tryAcquire(a)
    expect(tokenOf(took)).toBeGreaterThan(first)
    expect(took.acquired && took.grantedAt).toBeGreaterThan(0)
    expect(counted.commands()).toBe(sent)
    expect(heardByB).toEqual([])
    waitA.sub.close()
    // B still waits; A's release hands over to B in turn.
    expect(await b2.release(a)).toBe(true)
    await waitB.sub.wait(2_000)
    expect(tokenOf(await b3.tryAcquire(b))).toBeGreaterThan(tokenOf(took))
    waitB.sub.close()
    expect(await b3.release(b)).toBe(true)
    expect(await b1.isLocked({ key: name, kind: 'mutex', permits: 1 })).toBe(false)
  })

  it("a woken watcher's subscription gives the core its grant once, with no request", async () => {
    const name = lockName()
    const counted = countedBackend()
    const [b1, b2] = [backend(), counted.b]
    const holder = request(name)
    const first = tokenOf(await b1.tryAcquire(holder))
    const a = request(name)
    const waitA = await waitingTry(b2, a)
    expect(waitA.result.acquired).toBe(false)
    await subscribed(waitA)
    await waitA.sub.wait(1)
    // Nothing was granted yet: the core tries as usual.
    expect(waitA.sub.takeGrant()).toBeUndefined()
    expect(await b1.release(holder)).toBe(true)
    await waitA.sub.wait(2_000)
    const sent = counted.commands()
    const took = waitA.sub.takeGrant()
    expect(took?.acquired).toBe(true)
    expect(tokenOf(took as Awaited<ReturnType<RedisBackend['tryAcquire']>>)).toBeGreaterThan(first)
    expect(took?.acquired && took.grantedAt).toBeGreaterThan(0)
    expect(waitA.sub.takeGrant()).toBeUndefined()
    expect(counted.commands()).toBe(sent)
    waitA.sub.close()
    expect(await b2.release(a)).toBe(true)
    expect(await b1.isLocked({ key: name, kind: 'mutex', permits: 1 })).toBe(false)
  })

  it('with replicas to wait for, a woken watcher gives the core no grant: its try takes it and waits for them', async () => {
    const { name, b1, b2, holder } = await heldByFirst()
    const replicated = redisBackend({ client: scope.ownClient(), waitReplicas: { replicas: 1, timeoutMs: 100 } })
    try {
      const a = request(name)
      const waitA = await waitingTry(replicated as RedisBackend, a)
      expect(waitA.result.acquired).toBe(false)
      await subscribed(waitA)
      await waitA.sub.wait(1)
      expect(await b1.release(holder)).toBe(true)
      await waitA.sub.wait(2_000)
      expect(waitA.sub.takeGrant()).toBeUndefined()
      waitA.sub.close()
      // The grant is A's on the server all the same: released by its owner's id from another process.
      expect(await b2.release(a)).toBe(true)
    } finally {
      await replicated.close()
    }
  })

  it('a release whose oldest watcher waits in its own process hands the grant over in its reply, publishing nothing', async () => {
    const { name, b1, b2, holder } = await heldByFirst()
    const a = request(name)
    const b = request(name)
    // A waits in the holder's process, B (arrived later) in another.
    const waitA = await waitingTry(b1, a)
    const waitB = await waitingTry(b2, b)
    await subscribed(waitA, waitB)
    await waitA.sub.wait(1)
    await waitB.sub.wait(1)
    const notifier = (b1 as unknown as { notifier: { wakeChannel: string; dispatch(c: string, m: string): void } })
      .notifier
    const heard: string[] = []
    const dispatch = notifier.dispatch.bind(notifier)
    notifier.dispatch = (c, m) => {
      heard.push(m)
      dispatch(c, m)
    }
    expect(await b1.release(holder)).toBe(true)
    // A holds the grant once the release has answered, before any message could be read.
    expect((waitA.sub as RedisReleaseSubscription).granted).toBeDefined()
    // Nothing was published to A's process: a marker published after the release is the first message it hears.
    await client.publish(notifier.wakeChannel, 'marker')
    await eventually('the marker arrived', () => heard.includes('marker'))
    expect(heard).toEqual(['marker'])
    const sent = performance.now()
    const took = await b1.tryAcquire(a)
    expect(took.acquired && (took.grantedAt as number)).toBeLessThan(sent)
    waitA.sub.close()
    expect(await b1.release(a)).toBe(true)
    await waitB.sub.wait(2_000)
    expect(tokenOf(await b2.tryAcquire(b))).toBeGreaterThan(tokenOf(took))
    waitB.sub.close()
    expect(await b2.release(b)).toBe(true)
  })

  it('a release hands over in arrival order even when a watcher of its own process waits behind another', async () => {
    const { name, b1, b2, holder } = await heldByFirst()
    const a = request(name)
    const b = request(name)
    // B (another process) arrived first, then A in the holder's process.
    const waitB = await waitingTry(b2, b)
    const waitA = await waitingTry(b1, a)
    await subscribed(waitA, waitB)
    await waitA.sub.wait(1)
    await waitB.sub.wait(1)
    expect(await b1.release(holder)).toBe(true)
    expect((waitA.sub as RedisReleaseSubscription).granted).toBeUndefined()
    await waitB.sub.wait(2_000)
    const took = await b2.tryAcquire(b)
    expect(took.acquired).toBe(true)
    expect((await b1.tryAcquire(a)).acquired).toBe(false)
    waitB.sub.close()
    expect(await b2.release(b)).toBe(true)
    await waitA.sub.wait(2_000)
    expect((await b1.tryAcquire(a)).acquired).toBe(true)
    waitA.sub.close()
    expect(await b1.release(a)).toBe(true)
  })

  it('a watcher that missed the message finds its grant on its next try, timed from before that try', async () => {
    const { name, b1, b2, b3, holder } = await heldByFirst()
    const a = request(name)
    const waitA = await waitingTry(b2, a)
    expect(waitA.result.acquired).toBe(false)
    await b1.release(holder)
    // Another connection (no subscription, so no message) asks on A's behalf.
    const before = performance.now()
    const took = await b3.tryAcquire(a)
    expect(took.acquired).toBe(true)
    expect(took.acquired && (took.grantedAt as number)).toBeLessThan(before)
    waitA.sub.close()
    expect(await b3.release(a)).toBe(true)
  })

  it('a release skips watchers whose registration expired (a crashed process) and grants the oldest live one', async () => {
    const { name, b1, b2, b3, holder } = await heldByFirst()
    const a = request(name)
    const b = request(name)
    const waitA = await waitingTry(b2, a)
    const waitB = await waitingTry(b3, b)
    await subscribed(waitA, waitB)
    await waitB.sub.wait(1)
    // A's process "crashed": its registration (spec, expiry, wake channel) is past its expiry.
    const specs = b1.layout.keysOf({ key: name, kind: 'mutex' }).keys[5]
    const fieldA = b1.layout.fieldOf(a.owner)
    const spec = (await client.hget(specs, fieldA)) as string
    await client.hset(specs, fieldA, spec.replace(/ (\d+) (\S+)$/, ' 1 $2'))
    expect(await b1.release(holder)).toBe(true)
    await waitB.sub.wait(2_000)
    const took = await b3.tryAcquire(b)
    expect(took.acquired).toBe(true)
    // A's dead registration was dropped on the way; A itself gets nothing.
    expect(await client.hexists(specs, fieldA)).toBe(0)
    waitA.sub.close()
    waitB.sub.close()
    expect(await b2.release(a)).toBe(false)
    expect(await b3.release(b)).toBe(true)
  })

  it('a watcher that gives up without taking its grant passes it on to the next', async () => {
    const { name, b1, b2, b3, holder } = await heldByFirst('semaphore', 1)
    const a = request(name, 'semaphore', 1)
    const b = request(name, 'semaphore', 1)
    const waitA = await waitingTry(b2, a)
    const waitB = await waitingTry(b3, b)
    await subscribed(waitA, waitB)
    await b1.release(holder)
    await eventually(
      'the permit is granted to A',
      async () => (await b1.tryAcquire(request(name, 'semaphore', 1))).acquired === false,
      2_000,
      5,
    )
    // A leaves (timeout, abort) with the grant untaken: B gets the permit, the lock is never stuck.
    waitA.sub.close()
    await b2.leaveQueue(a)
    await waitB.sub.wait(2_000)
    expect((await b3.tryAcquire(b)).acquired).toBe(true)
    expect(await b2.release(a)).toBe(false)
    waitB.sub.close()
    expect(await b3.release(b)).toBe(true)
    expect(await b1.isLocked({ key: name, kind: 'semaphore', permits: 1 })).toBe(false)
  })

  it('a release never hands a permit to a watcher of another count: the watcher learns the count in force', async () => {
    const name = lockName()
    const [b1, b2] = [backend(), backend()]
    // Five short leases of a 5-permit semaphore fill it, and A (5) registers as a watcher.
    for (let i = 0; i < 5; i++) {
      expect((await b1.tryAcquire({ ...request(name, 'semaphore', 5), ttlMs: 300 })).acquired).toBe(true)
    }
    const a = request(name, 'semaphore', 5)
    const waitA = await waitingTry(b2, a)
    expect(waitA.result.acquired).toBe(false)
    // They expire unreleased (nothing is handed off): idle, X and Y define 2 while A is still registered.
    const [x, y] = [request(name, 'semaphore', 2), request(name, 'semaphore', 2)]
    await eventually('the five leases expired', async () => (await b1.tryAcquire(x)).acquired, 3_000, 5)
    expect((await b1.tryAcquire(y)).acquired).toBe(true)
    // X's release finds A first in line with a free permit, but of another count: A is only woken.
    expect(await b1.release(x)).toBe(true)
    expect(await b2.tryAcquire(a)).toEqual({ acquired: false, permitsInForce: 2 })
    waitA.sub.close()
    await b2.leaveQueue(a)
    expect(await b2.release(a)).toBe(false)
    expect(await b1.release(y)).toBe(true)
    expect(await b1.isLocked({ key: name, kind: 'semaphore', permits: 2 })).toBe(false)
  })
})
