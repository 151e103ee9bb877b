/**
 * RedLock release notifications when a lock's channel is subscribed while the subscriber connections are still in
 * their handshake (slow on a loaded host): the channel must still hear the releases. Before the fix, ioredis sent
 * that SUBSCRIBE during the handshake, failed its own ready check for it, reconnected and forgot the channel, so
 * the waiters of that lock in this process heard no release again and only got it by their 2 s fallback rounds
 * (in the flash-sale app under load: 905 of 1,000 buyers timed out on one shard lock).
 */
import type { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import type { Backend } from '../src/backend/types.js'
import { redlockBackend } from '../src/backends/redlock/index.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { eventually } from '../src/testing/index.js'
import { HeldReplyProxy } from './support/held-reply-proxy.js'
import {
  createRedlockBackend,
  deleteRedlockKeys,
  owning,
  REDLOCK_URLS,
  redlockIoredis,
} from './support/redlock-backend-module.js'

const namespace = `rlhandshake${process.pid}`

/** The backend with a count of the answered `tryAcquire` calls per lock name. */
function counted(backend: Backend): { backend: Backend; answered: (name: string) => number } {
  const answered = new Map<string, number>()
  const inner = backend.tryAcquire.bind(backend)
  const wrapped = Object.assign(Object.create(backend) as Backend, {
    tryAcquire: async (...args: Parameters<Backend['tryAcquire']>) => {
      const result = await inner(...args)
      answered.set(args[0].key, (answered.get(args[0].key) ?? 0) + 1)
      return result
    },
  })
  return { backend: wrapped, answered: (name) => answered.get(`${namespace}:${name}`) ?? 0 }
}

describe('redlock notifications subscribed during the subscriber handshake', () => {
  const proxies: HeldReplyProxy[] = []
  const backends: Backend[] = []
  const locks: Locks[] = []

  afterAll(async () => {
    for (const l of locks) await l.close()
    for (const b of backends) await b.close()
    for (const p of proxies) await p.close()
    await deleteRedlockKeys(namespace)
  })

  it('a lock whose channel is subscribed mid-handshake still wakes its waiter at the release, not at the fallback', async () => {
    for (const url of REDLOCK_URLS) {
      const { hostname, port } = new URL(url)
      proxies.push(await new HeldReplyProxy(Number(port), hostname).start())
    }
    const holderBackend = createRedlockBackend()
    // The waiter's command connections go through the proxies and are ready before any reply is held.
    const clients: Redis[] = proxies.map((p) => redlockIoredis(p.url))
    await Promise.all(clients.map((c) => c.ping()))
    const waiterBackend = owning(redlockBackend({ clients }), async () => {
      for (const c of clients) c.disconnect()
    })
    backends.push(holderBackend, waiterBackend)
    const { backend, answered } = counted(waiterBackend)
    const holder = createLocks({ backend: holderBackend, namespace })
    const waiter = createLocks({ backend, namespace })
    locks.push(holder, waiter)
    const leaseA = await holder.mutex('a').acquire({ ttlMs: 20_000 })
    const leaseB = await holder.mutex('b').acquire({ ttlMs: 20_000 })

    // The first wait opens the subscriber connections (one per node); their handshakes' replies are held.
    for (const p of proxies) p.holdNewConnections()
    const waitingA = waiter.mutex('a').acquire({ waitMs: 15_000 })
    // Should the test fail, closing the Locks rejects the waits still pending: not an unhandled rejection.
    waitingA.catch(() => undefined)
    await eventually('every subscriber connection in its handshake', () =>
      proxies.every((p) => p.heldWithReplies === 1),
    )
    // A waiter of a second lock subscribes its channel now (before its first try), mid-handshake.
    let acquiredBAt = 0
    const waitingB = waiter
      .mutex('b')
      .acquire({ waitMs: 15_000 })
      .then((l) => {
        acquiredBAt = performance.now()
        return l
      })
    waitingB.catch(() => undefined)
    await eventually('the b waiter tried', () => answered('b') >= 1)
    for (const p of proxies) p.releaseHeld()
    // The acknowledgement of b's SUBSCRIBE wakes its waiter for one more try (a release before it went unseen),
    // well before its fallback round (2 s after its first try).
    await eventually('the b waiter tried after its channel was subscribed', () => answered('b') >= 2, 1_500)

    const releasedAt = performance.now()
    await leaseB.release()
    const b = await waitingB
    // Woken by the release message; without it the next try is the fallback round, 2 s after the last one.
    expect(acquiredBAt - releasedAt).toBeLessThan(1_000)
    await b.release()
    await leaseA.release()
    await (await waitingA).release()
  })
})
