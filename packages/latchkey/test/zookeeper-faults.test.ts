/**
 * ZooKeeper-specific behaviour on the standalone server (scripts/servers/zookeeper.sh start):
 * no herd, protected-name recovery after a lost create reply, and liveness under a silent partition.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import type { AcquireRequest, Backend, LockKind } from '../src/backend/types.js'
import { type ZookeeperBackend, zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { createLocks } from '../src/core/locks.js'
import { BackendUnavailableError, LockLostError } from '../src/errors.js'
import { countTries } from './support/counted-tries.js'
import { eventually } from './support/eventually.js'
import { childrenOf, cleanupNamespace, rawClient, zkUrl } from './support/zookeeper-env.js'
import { ZkProxy } from './support/zookeeper-proxy.js'

const namespace = `lkz-${randomUUID().slice(0, 8)}`
const port = Number(zkUrl().split(',')[0]?.split(':')[1] ?? 2181)
const opened: Backend[] = []
const backend = (connectString = zkUrl(), sessionTimeoutMs = 6_000): ZookeeperBackend => {
  const b = zookeeperBackend({ connectString, sessionTimeoutMs })
  opened.push(b)
  return b
}
const request = (key: string, kind: LockKind = 'mutex', permits = 1): AcquireRequest => ({
  key: `${namespace}:${key}`,
  kind,
  owner: randomUUID(),
  ttlMs: 10_000,
  permits,
  lockDelayMs: 0,
  queue: false,
  queueTtlMs: 5_000,
})
/**
 * Two requests answered on `b`'s session, then one turn of the event loop. ZooKeeper answers one session's
 * requests and watch events in order, so any watch event the writes before this triggered has been delivered,
 * and the re-check it started (one more request) answered: "nothing woke" can be checked without a sleep.
 */
async function settled(b: Backend): Promise<void> {
  for (let i = 0; i < 2; i++) await b.isLocked({ key: `${namespace}:settle`, kind: 'mutex', permits: 1 })
  await new Promise((resolve) => setImmediate(resolve))
}

/** What the test reads of the backend's subscriptions: how many wakes each got. */
interface ZkSubscriptionLike {
  readonly fired: number
  close(): void
}

afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()))
  await cleanupNamespace(zkUrl(), namespace)
})

describe('zookeeper: no herd', () => {
  it('one release wakes exactly one of 10 waiters, in line order; a holder renewing wakes nobody', async () => {
    const b = backend()
    const holder = request('herd')
    expect((await b.tryAcquire(holder)).acquired).toBe(true)
    const waiters = Array.from({ length: 10 }, () => ({ ...request('herd'), owner: randomUUID() }))
    const subs: ZkSubscriptionLike[] = []
    for (const [i, w] of waiters.entries()) {
      // As the core does: subscribe, then the first try in the same tick (this binds the two); every other
      // waiter names its owner instead (what the core does).
      const sub = b.subscribe(w, i % 2 === 0 ? undefined : w.owner) as unknown as ZkSubscriptionLike
      expect((await b.tryAcquire(w)).acquired).toBe(false)
      subs.push(sub)
    }
    const fired = () => subs.map((sub) => sub.fired)
    // Renewals rewrite the holder's node (a data change for its successor's watch): nobody may wake.
    for (let i = 0; i < 3; i++) expect(await b.renew({ ...holder, ttlMs: 10_000 })).toBe(true)
    await settled(b)
    expect(fired()).toEqual(Array(10).fill(0))
    let current = holder
    for (let round = 0; round < 4; round++) {
      expect(await b.release(current)).toBe(true)
      await eventually(`waiter ${round} woke`, () => fired()[round] === 1)
      await settled(b)
      // Exactly the next in line woke up, once; nobody else, and no earlier holder. (The waiter behind it, which
      // watches the node two ahead of its own, lists the line without waking: zk-first-in-line.ts.)
      expect(fired()).toEqual(waiters.map((_, i) => (i <= round ? 1 : 0)))
      current = waiters[round] as AcquireRequest
      const result = await b.tryAcquire(current)
      expect(result.acquired).toBe(true)
    }
    await b.release(current)
    for (const [i, w] of waiters.entries()) if (i >= 4) await b.leaveQueue(w)
    for (const sub of subs) sub.close()
    // Closing the subscriptions of the remaining waiters gave up their places: the lock node is gone.
    const raw = await rawClient(zkUrl())
    try {
      const herd = `/latchkey/${encodeURIComponent(`${namespace}:herd`)}`
      await eventually('the herd lock node is empty', async () => (await childrenOf(raw, herd)).length === 0)
    } finally {
      raw.close()
    }
  })
})

describe('zookeeper: lock nodes', () => {
  it('an emptied lock node is kept while in use and deleted once idle', async () => {
    const b = zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: 6_000, lockNodeIdleMs: 300 })
    opened.push(b)
    const raw = await rawClient(zkUrl())
    const path = `/latchkey/${encodeURIComponent(`${namespace}:idle`)}`
    const exists = () => new Promise<boolean>((resolve) => raw.exists(path, (_e, stat) => resolve(stat != null)))
    try {
      for (let i = 0; i < 3; i++) {
        const r = request('idle')
        expect((await b.tryAcquire(r)).acquired).toBe(true)
        expect(await b.release(r)).toBe(true)
        expect(await exists()).toBe(true)
      }
      await eventually('the idle lock node was deleted', async () => !(await exists()))
    } finally {
      raw.close()
    }
  })
})

describe('zookeeper: watchLease', () => {
  it('tells a holder at once when its node is deleted behind its back, and not for its own renewals', async () => {
    const b = backend()
    const r = request('watched')
    expect((await b.tryAcquire(r)).acquired).toBe(true)
    const reasons: string[] = []
    const stop = b.watchLease(r, (reason) => reasons.push(reason))
    await settled(b) // the watch on its node is armed
    for (let i = 0; i < 3; i++) expect(await b.renew({ ...r, ttlMs: 10_000 })).toBe(true)
    await settled(b)
    expect(reasons).toEqual([])
    expect(await backend().forceRelease(r)).toBe(true)
    await eventually('the holder was told', () => reasons.length > 0, 1_000)
    await settled(b)
    expect(reasons).toHaveLength(1)
    expect(reasons[0]).toMatch(/deleted/)
    expect(await b.renew({ ...r, ttlMs: 10_000 })).toBe(false)
    stop()
  })
})

describe('zookeeper: watchLease, a young lease', () => {
  it('force-released before its holder watches its node, it is told once the watch is set', async () => {
    const b = backend()
    const r = request('young')
    expect((await b.tryAcquire(r)).acquired).toBe(true)
    const reasons: string[] = []
    const stop = b.watchLease(r, (reason) => reasons.push(reason))
    // At once, within GUARD_AFTER_MS: the holder watches nothing yet, and learns of it when it sets the watch.
    expect(await backend().forceRelease(r)).toBe(true)
    await eventually('the holder was told', () => reasons.length > 0, 1_000)
    expect(reasons).toHaveLength(1)
    expect(reasons[0]).toMatch(/deleted/)
    stop()
  })
})

describe('zookeeper: handoff on the deletion event', () => {
  it('forceRelease while the next in line is cut off: reconnected, it takes a new place and holds, never a lease on its deleted node', async () => {
    const proxy = await new ZkProxy(port).start()
    try {
      const waiterBackend = backend(proxy.url)
      const tries = countTries(waiterBackend)
      const holderLocks = createLocks({ backend: backend(), namespace })
      const waiterLocks = createLocks({ backend: waiterBackend, namespace })
      const first = await holderLocks.mutex('reconnect').acquire()
      const waiting = waiterLocks.mutex('reconnect').acquire({ waitMs: 15_000 })
      // Its watches are set: it is granted on the holder's deletion event from now on.
      await eventually('the waiter is in line, its watches set', () => tries() === 1)
      proxy.blackhole()
      // Deletes the waiter's node, then the holder's; the waiter hears of both only when it reconnects, in the order of
      // its watched paths (SetWatches), the holder's first: that event must not grant it on its deleted node.
      expect(await backend().forceRelease(request('reconnect'))).toBe(true)
      // The reconnect's frames come one per turn, so the holder's deletion event is handled, and any try it starts
      // has run, before the event of the waiter's own node.
      proxy.spaceFrames(20)
      proxy.heal()
      const lease = await waiting
      await settled(waiterBackend)
      expect(lease.signal.aborted).toBe(false)
      const state = await holderLocks.inspect('reconnect')
      expect(state.holders).toHaveLength(1)
      expect(state.waiters).toHaveLength(0)
      expect(proxy.accepted).toBe(2)
      await lease.release()
      await first.release().catch(() => undefined)
      await Promise.all([holderLocks.close(), waiterLocks.close()])
    } finally {
      await proxy.close()
    }
  })
})

describe('zookeeper: a waiter moved up without a try', () => {
  it('judges the new holder at its lease expiry: a holder that stops renewing is taken over after its TTL, not at the next fallback poll', async () => {
    const locks = createLocks({ backend: backend(), namespace })
    const others = createLocks({ backend: backend(), namespace })
    const first = await locks.mutex('moved-up').acquire()
    // Second in line: held without renewals; its lease runs 300 ms from its create (the young lease it is granted on).
    const queuedAt = performance.now()
    const second = locks.mutex('moved-up').acquire({ waitMs: 10_000, ttlMs: 300, autoRenew: false })
    await eventually('one waiter', async () => (await locks.inspect('moved-up')).waiters.length === 1)
    // Third: its core's last try found two nodes ahead, so it would next try at the 2 s fallback poll; the holder's
    // deletion moves it up (ZkWaiters.moveUp), which reads the new holder's lease and wakes it at that lease's end.
    const third = others.mutex('moved-up').acquire({ waitMs: 10_000 })
    await eventually('two waiters', async () => (await locks.inspect('moved-up')).waiters.length === 2)
    await first.release()
    const held = await second
    const grantedAt = performance.now()
    const next = await third
    // Not before that lease ran out (judged by the server's clock, from a create sent after `queuedAt`), and long
    // before the fallback poll.
    expect(performance.now() - queuedAt).toBeGreaterThanOrEqual(300 - 20)
    expect(performance.now() - grantedAt).toBeLessThan(300 + 700)
    expect(next.token).toBeGreaterThan(held.token)
    await next.release()
    await Promise.all([locks.close(), others.close()])
  })
})

describe('zookeeper: protected names', () => {
  it('a create whose reply is lost is found again by its _c_<owner>- prefix, leaving no orphan', async () => {
    const proxy = await new ZkProxy(port).start()
    try {
      const b = backend(proxy.url)
      // A reader keeps the lock node alive, so the create whose reply is lost is the second reader's own.
      const warm = request('protected', 'read')
      expect((await b.tryAcquire(warm)).acquired).toBe(true)
      proxy.loseReplyToNextCreate()
      const r = request('protected', 'read')
      const result = await b.tryAcquire(r)
      // The reply was really lost on a live session: the client reconnected through the proxy.
      expect(proxy.droppedCreateXid).toBeDefined()
      expect(proxy.accepted).toBe(2)
      expect(result.acquired).toBe(true)
      const raw = await rawClient(zkUrl())
      const children = await childrenOf(raw, `/latchkey/${encodeURIComponent(`${namespace}:protected`)}`)
      raw.close()
      expect(children).toHaveLength(2)
      expect(children.filter((c) => c.startsWith(`_c_${r.owner}-read-`))).toHaveLength(1)
      expect(await b.release(r)).toBe(true)
      expect(await b.release(warm)).toBe(true)
    } finally {
      await proxy.close()
    }
  })
})

describe('zookeeper: session liveness', () => {
  it('a silent partition: calls fail within the session timeout instead of hanging, the holder loses its lease before anyone else acquires, and a new session follows', async () => {
    const proxy = await new ZkProxy(port).start()
    try {
      const sessionMs = 3_000
      const partitioned = backend(proxy.url, sessionMs)
      const holderLocks = createLocks({ backend: partitioned, namespace })
      const otherLocks = createLocks({ backend: backend(), namespace })
      const lease = await holderLocks.mutex('partition').acquire({ ttlMs: sessionMs })
      // A holder with renewals far apart learns of the lost session through watchLease, not its next renewal.
      const direct = { ...request('partition-watched'), ttlMs: 60_000 }
      expect((await partitioned.tryAcquire(direct)).acquired).toBe(true)
      let watchedLost: string | undefined
      partitioned.watchLease(direct, (reason) => {
        watchedLost = reason
      })
      await settled(partitioned) // the watch is armed before the cut
      proxy.blackhole()
      const cutAt = performance.now()
      let lostAt = 0
      lease.signal.addEventListener('abort', () => {
        lostAt = performance.now()
      })
      // node-zookeeper-client alone would never answer this (no read timeout); the liveness check fails it,
      // after reporting the session suspended from 2/3 of the session timeout on.
      const states: { state: string; at: number }[] = []
      const poll = setInterval(
        () => states.push({ state: partitioned.sessionState, at: performance.now() - cutAt }),
        20,
      )
      const stuck = await partitioned.tryAcquire(request('partition-other')).catch((e: unknown) => e)
      clearInterval(poll)
      states.push({ state: partitioned.sessionState, at: performance.now() - cutAt })
      expect(stuck).toBeInstanceOf(BackendUnavailableError)
      expect(watchedLost).toMatch(/session was lost/)
      expect(performance.now() - cutAt).toBeLessThan(sessionMs + 1_500)
      // connected -> suspended (2/3 of the timeout after the last answered request) -> lost (no session).
      const order = states.map((s) => s.state).filter((state, i, all) => state !== all[i - 1])
      expect(order).toEqual(['connected', 'suspended', 'none'])
      const next = await otherLocks.mutex('partition').acquire({ waitMs: 15_000 })
      const acquiredAt = performance.now()
      expect(lease.signal.reason).toBeInstanceOf(LockLostError)
      expect(lostAt).toBeGreaterThan(0)
      expect(lostAt).toBeLessThan(acquiredAt)
      expect(next.token > lease.token).toBe(true)
      await next.release()
      // Healed: the old backend opens a new session by itself for new acquires.
      proxy.heal()
      const again = await holderLocks.mutex('partition').acquire({ waitMs: 10_000 })
      expect(again.token > next.token).toBe(true)
      await again.release()
      await Promise.all([holderLocks.close(), otherLocks.close()])
    } finally {
      await proxy.close()
    }
  }, 30_000)
})
