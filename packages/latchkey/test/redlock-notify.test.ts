/**
 * RedLock release notifications, on the five shared nodes of scripts/servers/redlock.sh: a release wakes a waiter
 * of another backend instance (another process's connections) instead of its polling, the waiters of one process
 * are served in order of arrival, and a waiter that kept the keys of a split round it led gives them back when it
 * gives up.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { Backend } from '../src/backend/types.js'
import { REDLOCK_KEY_PREFIX, redlockBackend } from '../src/backends/redlock/index.js'
import { ACQUIRE } from '../src/backends/redlock/scripts/index.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { eventually } from '../src/testing/index.js'
import {
  createRedlockBackend,
  deleteRedlockKeys,
  owning,
  REDLOCK_URLS,
  redlockIoredis,
} from './support/redlock-backend-module.js'

const namespace = `rlnotify${process.pid}`

/** The backend with a count of its `tryAcquire` calls. */
function counted(backend: Backend): { backend: Backend; tries: () => number } {
  let tries = 0
  const inner = backend.tryAcquire.bind(backend)
  const wrapped = Object.assign(Object.create(backend) as Backend, {
    tryAcquire: (...args: Parameters<Backend['tryAcquire']>) => {
      tries++
      return inner(...args)
    },
  })
  return { backend: wrapped, tries: () => tries }
}

describe('redlock release notifications', () => {
  const backends: Backend[] = []
  const locks: Locks[] = []
  const open = (backend: Backend) => {
    const l = createLocks({ backend, namespace })
    locks.push(l)
    return l
  }

  afterAll(async () => {
    for (const l of locks) await l.close()
    for (const b of backends) await b.close()
    await deleteRedlockKeys(namespace)
  })

  it('declares global notifications and wakes a waiter of another instance at the release, without polling', async () => {
    const holderBackend = createRedlockBackend()
    const waiterBackend = createRedlockBackend()
    backends.push(holderBackend, waiterBackend)
    expect(waiterBackend.capabilities.notifications).toBe('global')
    const { backend, tries } = counted(waiterBackend)
    const holder = open(holderBackend)
    const waiter = open(backend)
    const lease = await holder.mutex('wake').acquire({ ttlMs: 20_000 })
    let acquiredAt = 0
    const waiting = waiter
      .mutex('wake')
      .acquire({ waitMs: 15_000 })
      .then((l) => {
        acquiredAt = performance.now()
        return l
      })
    // Held for 3 s: a poller (maxPollMs 100) would try about 30 times; a notified waiter a few times at most (its
    // first try, one after its channel is subscribed, one fallback round a second, the one the release wakes: 6),
    // with room for a round that a slow node split (one CI run counted 7 on a loaded machine).
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    expect(acquiredAt).toBe(0)
    const releasedAt = performance.now()
    await lease.release()
    const second = await waiting
    expect(tries()).toBeLessThanOrEqual(10)
    // Woken by the release, not by the next fallback round (which would come about a second later).
    expect(acquiredAt - releasedAt).toBeLessThan(700)
    await second.release()
  })

  it('serves the waiters of one process in their order of arrival', async () => {
    const holderBackend = createRedlockBackend()
    const waiterBackend = createRedlockBackend()
    backends.push(holderBackend, waiterBackend)
    const { backend, tries } = counted(waiterBackend)
    const holder = open(holderBackend)
    const waiter = open(backend)
    const lease = await holder.mutex('fifo').acquire({ ttlMs: 20_000 })
    const order: number[] = []
    const done: Promise<void>[] = []
    for (let i = 0; i < 12; i++) {
      const before = tries()
      done.push(
        waiter
          .mutex('fifo')
          .acquire({ waitMs: 15_000 })
          .then(async (l) => {
            order.push(i)
            await l.release()
          }),
      )
      // The next waiter arrives once this one has made its first try.
      await eventually(`waiter ${i} tried`, () => tries() > before)
    }
    await lease.release()
    await Promise.all(done)
    expect(order).toEqual([...Array(12).keys()])
  })

  it('a release hands the lock to the process that took its place in line first, waking no other', async () => {
    const admin = REDLOCK_URLS.map(redlockIoredis)
    const name = 'line'
    const line = `${REDLOCK_KEY_PREFIX}${namespace}:${name}\u0000line`
    const channel = `${REDLOCK_KEY_PREFIX}${namespace}:${name}:released`
    const holderBackend = createRedlockBackend()
    backends.push(holderBackend)
    const lease = await open(holderBackend).mutex(name).acquire({ ttlMs: 20_000 })
    // Three processes (backend instances), each with one waiter, in line one after another on every node.
    const waiters = [0, 1, 2].map(() => {
      const c = counted(createRedlockBackend())
      backends.push(c.backend)
      return { ...c, locks: open(c.backend) }
    })
    const order: number[] = []
    const triesAtGrant: number[][] = []
    const done: Promise<void>[] = []
    try {
      for (const [i, w] of waiters.entries()) {
        done.push(
          w.locks
            .mutex(name)
            .acquire({ waitMs: 15_000 })
            .then(async (l) => {
              order.push(i)
              triesAtGrant.push(waiters.map((x) => x.tries()))
              await l.release()
            }),
        )
        // Subscribed on every node (each acknowledgement wakes it for a try), then in line on every node.
        await eventually(`waiter ${i} subscribed on every node`, async () =>
          (await Promise.all(admin.map((a) => a.call('PUBSUB', 'NUMSUB', channel)))).every(
            // The holder's instance subscribed too (an acquire that may wait subscribes before its first try).
            (r) => Number((r as [string, number])[1]) === i + 2,
          ),
        )
        await eventually(`waiter ${i} in line on every node`, async () =>
          (await Promise.all(admin.map((a) => a.zcard(line)))).every((n) => n === i + 1),
        )
      }
      const triesBefore = waiters.map((x) => x.tries())
      await lease.release()
      await Promise.all(done)
      // Each release went to the next in line; before, every process's waiter was woken by each release and raced.
      expect(order).toEqual([0, 1, 2])
      // When waiter i got the lock, the waiters after it had not been woken (no try since they took their place).
      for (const [i, tries] of triesAtGrant.entries()) {
        for (let j = i + 1; j < 3; j++) expect(tries[j]).toBe(triesBefore[j])
      }
      expect(await Promise.all(admin.map((a) => a.exists(line)))).toEqual([0, 0, 0, 0, 0])
    } finally {
      for (const a of admin) a.disconnect()
    }
  })

  it('a release at home hands the lock to the next waiter of its process without a message, and places the one behind it in line without a round of its own', async () => {
    const admin = REDLOCK_URLS.map(redlockIoredis)
    const monitors = REDLOCK_URLS.map(redlockIoredis)
    const name = 'home'
    const key = `${REDLOCK_KEY_PREFIX}${namespace}:${name}`
    const line = `${key}\u0000line`
    const channel = `${key}:released`
    // The backend's own connections, counting its ACQUIRE rounds per owner (ARGV[1], after the three keys).
    const clients = REDLOCK_URLS.map(redlockIoredis)
    const rounds = new Map<string, number>()
    for (const c of clients) {
      const evalsha = c.evalsha.bind(c) as (...a: unknown[]) => Promise<unknown>
      ;(c as unknown as { evalsha: typeof evalsha }).evalsha = (...a) => {
        if (a[0] === ACQUIRE.sha) {
          const owner = String(a[2 + Number(a[1])])
          rounds.set(owner, (rounds.get(owner) ?? 0) + 1)
        }
        return evalsha(...a)
      }
    }
    const { backend, tries } = counted(
      owning(redlockBackend({ clients }), async () => {
        for (const c of clients) c.disconnect()
      }),
    )
    backends.push(backend)
    const messages: string[] = []
    const heard = new Set<number>()
    monitors.forEach((m, i) => {
      m.on('message', (_, message: string) => {
        if (message === 'sentinel') heard.add(i)
        else messages.push(message)
      })
    })
    const l = open(backend)
    const lease = await l.mutex(name).acquire({ ttlMs: 20_000 })
    const order: number[] = []
    let openGate = () => {}
    const gate = new Promise<void>((resolve) => {
      openGate = resolve
    })
    const done: Promise<void>[] = []
    try {
      await Promise.all(monitors.map((m) => m.subscribe(channel)))
      for (let i = 0; i < 3; i++) {
        const before = tries()
        done.push(
          l
            .mutex(name)
            .acquire({ waitMs: 15_000 })
            .then(async (held) => {
              order.push(i)
              if (i === 0) await gate
              await held.release()
            }),
        )
        await eventually(`waiter ${i} tried`, () => tries() > before)
      }
      // The first waiter (the head) is in line on every node; the two behind it are not.
      const members = () => Promise.all(admin.map((a) => a.zrange(line, 0, -1)))
      await eventually('the head in line on every node', async () => (await members()).every((m) => m.length === 1))
      const head = (await members())[0]?.[0]
      await lease.release()
      await eventually('the first waiter holds the lock', () => order.length === 1)
      // The release that handed it the lock put the next waiter in line on every node: no round of its own did.
      await eventually('the next waiter in line on every node', async () =>
        (await members()).every((m) => m.length === 1 && m[0] !== head),
      )
      const next = (await members())[0]?.[0] as string
      expect(rounds.get(next) ?? 0).toBe(0)
      // Nothing was announced: a message sent by each node after the handover arrives, and none came before it (a
      // node's messages arrive in order). A node not heard from is sent another: one CI run missed a sentinel within
      // 3 s, cause not found (a subscriber whose connection is reset misses what is published until it subscribes
      // again); a release announced before it would still have come first.
      await eventually('every node heard', async () => {
        for (const [i, a] of admin.entries()) if (!heard.has(i)) await a.publish(channel, 'sentinel')
        return heard.size === admin.length
      })
      expect(messages).toEqual([])
      openGate()
      await Promise.all(done)
      expect(order).toEqual([0, 1, 2])
    } finally {
      openGate()
      for (const c of [...admin, ...monitors]) c.disconnect()
    }
  })

  it('a waiter that kept the keys of a split round it led gives them back when it gives up', async () => {
    const admin = REDLOCK_URLS.map(redlockIoredis)
    const name = 'led'
    const key = `${REDLOCK_KEY_PREFIX}${namespace}:${name}`
    const channel = `${key}:released`
    const backend = createRedlockBackend()
    backends.push(backend)
    const l = open(backend)
    // x on nodes 0 and 1, y on node 2; x's release is announced (its keys linger, as on nodes the release has not
    // reached yet). The waiter then gets nodes 3 and 4: more than any live owner, so it leads and keeps them.
    await Promise.all([0, 1, 2].map((i) => admin[i]?.set(key, i < 2 ? 'x' : 'y', 'PX', 30_000)))
    const announce = setInterval(() => void admin[0]?.publish(channel, 'x'), 20)
    try {
      await expect(l.mutex(name).acquire({ waitMs: 1_500 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' })
      // A round still out at the deadline is answered first, then the keys are given back (in the background).
      const values = () => Promise.all(admin.map((a) => a.get(key)))
      await eventually('the kept keys given back', async () => (await values())[3] === null)
      expect(await values()).toEqual(['x', 'x', 'y', null, null])
    } finally {
      clearInterval(announce)
      await Promise.all(admin.map((a) => a.del(key)))
      for (const a of admin) a.disconnect()
    }
  })
})
