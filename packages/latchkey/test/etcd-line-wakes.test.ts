/**
 * Which etcd deletes wake which waiting mutex acquire: each costs the woken waiter a try (and, behind a key, a
 * keepalive) in its process, so a wake-up that cannot let it through is CPU spent for nothing.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { AcquireRequest, AcquireResult, Backend } from '../src/backend/types.js'
import { type EtcdClient, type EtcdWatcher, openEtcdClient } from '../src/backends/etcd/etcd-client.js'
import { etcdBackend } from '../src/backends/etcd/index.js'
import { KeyLayout, prefixRange } from '../src/backends/etcd/keys.js'
import { createLocks } from '../src/core/locks.js'
import { ETCD_URL } from './support/etcd-backend-module.js'
import { eventually } from './support/eventually.js'

const admin = openEtcdClient({ hosts: [ETCD_URL], callTimeoutMs: 2_000 })
afterAll(() => admin.close())
const layout = new KeyLayout('latchkey')

/** `inner` whose watchers report each delete to `deleted` before the backend hears of it. */
function reportingDeletes(inner: EtcdClient, deleted: (key: string) => void): EtcdClient {
  return {
    ...inner,
    watch: () => {
      const builder = inner.watch()
      return {
        inRange: (range) => ({
          only: (...ops) => ({
            watcher: (): EtcdWatcher => {
              const watcher = builder
                .inRange(range)
                .only(...ops)
                .watcher()
              watcher.on('delete', (kv) => deleted(kv.key.toString()))
              return watcher
            },
          }),
        }),
      }
    },
    close: () => inner.close(),
  }
}

/**
 * Records in `answers` each answer `backend` gives the core for an acquire: its answers, and the grants a woken
 * waiter's subscription hands over without a try (`takeGrant`), which it also counts in `taken.count`.
 */
function recordAnswers(backend: Backend, answers: AcquireResult[], taken = { count: 0 }): void {
  const tryAcquire = backend.tryAcquire.bind(backend)
  backend.tryAcquire = async (request: AcquireRequest) => {
    const result = await tryAcquire(request)
    answers.push(result)
    return result
  }
  const subscribe = backend.subscribe?.bind(backend)
  if (subscribe === undefined) return
  backend.subscribe = (ref, owner) => {
    const sub = subscribe(ref, owner)
    const takeGrant = sub.takeGrant?.bind(sub)
    if (takeGrant === undefined) return sub
    return Object.assign(sub, {
      takeGrant: () => {
        const result = takeGrant()
        if (result !== undefined) {
          answers.push(result)
          taken.count++
        }
        return result
      },
    })
  }
}

describe('etcd: wake-ups of waiting mutex acquires', () => {
  it("a head put in line by its process's release, behind another process's key, is not woken by that release's delete", async () => {
    const namespace = `lk-lwake-${process.pid}`
    const lockKey = `${namespace}:m`
    const { start, end } = prefixRange(layout.lockPrefix(lockKey))
    const range = { key: start, range_end: end }
    // Process A: its release txn answers only once its watch has delivered the delete of the released key (the
    // order that, when it happens by itself, latched a wake-up of the head whose key that txn put in line).
    const seen = new Set<string>()
    const waiting = new Map<string, () => void>()
    const innerA = openEtcdClient({ hosts: [ETCD_URL], callTimeoutMs: 2_000 })
    const clientA = reportingDeletes(innerA, (key) => {
      seen.add(key)
      waiting.get(key)?.()
    })
    const txn = clientA.kv.txn
    const kvA: EtcdClient['kv'] = {
      range: (request) => clientA.kv.range(request),
      txn: async (request) => {
        const res = await txn(request)
        const deleted = request.success?.[0]?.request_delete_range?.key.toString()
        if (deleted !== undefined && res.succeeded && !seen.has(deleted)) {
          await new Promise<void>((resolve) => waiting.set(deleted, resolve))
        }
        return res
      },
    }
    const backendA = etcdBackend({ client: { ...clientA, kv: kvA } })
    const answers: AcquireResult[] = []
    recordAnswers(backendA, answers)
    const backendB = etcdBackend({ hosts: ETCD_URL })
    const locksA = createLocks({ backend: backendA, namespace, ttlMs: 30_000 })
    const locksB = createLocks({ backend: backendB, namespace, ttlMs: 30_000 })
    try {
      const a1 = await locksA.mutex('m').acquire({ waitMs: 1_000 })
      const b1 = locksB.mutex('m').acquire({ waitMs: 10_000 })
      await eventually('B has a place in line', async () => (await admin.kv.range(range)).kvs.length === 2)
      const before = answers.length
      const a2 = locksA.mutex('m').acquire({ waitMs: 10_000 })
      // Its first try found the holder of its process: it waits for that release to put it in line.
      await eventually("A's second acquire tried", () => answers.length > before)
      const releasing = answers.length
      await a1.release()
      const heldB = await b1
      await heldB.release()
      const heldA = await a2
      // Its one answer after the release is its grant, when B's key goes. A wake-up by the delete of a1's key (its
      // place was behind B's then) was a second try, with a keepalive, for nothing.
      expect(answers.slice(releasing).map((t) => t.acquired)).toEqual([true])
      expect(heldA.token).toBeGreaterThan(heldB.token)
      await heldA.release()
    } finally {
      await locksA.close()
      await locksB.close()
      await backendA.close()
      await backendB.close()
      innerA.close()
      await admin.kv.txn({ success: [{ request_delete_range: range }] })
    }
  })

  it('the next local waiter joins with the release of the one just granted without a try of its own: one answer each, its grant, handed over with the wake-up', async () => {
    const namespace = `lk-lnext-${process.pid}`
    const lockKey = `${namespace}:m`
    const { start, end } = prefixRange(layout.lockPrefix(lockKey))
    const backend = etcdBackend({ hosts: ETCD_URL })
    const answers: AcquireResult[] = []
    const taken = { count: 0 }
    recordAnswers(backend, answers, taken)
    const locks = createLocks({ backend, namespace, ttlMs: 30_000 })
    try {
      const began = performance.now()
      const holder = await locks.mutex('m').acquire({ waitMs: 1_000 })
      const waiters = Array.from({ length: 5 }, () =>
        locks
          .mutex('m')
          .acquire({ waitMs: 10_000 })
          .then((lease) => lease.release()),
      )
      // The holder's try, then each waiter's first: the first waiter finds the holder and waits for its release to
      // put it in line, the others wait behind it without asking etcd.
      await eventually('every waiter tried once', () => answers.length === 6)
      // Each comes back within a third of its TTL (30 s here) by itself: a waiter put in line without a try of its
      // own keeps its place's lease alive with those answers.
      expect(answers.slice(1).map((t) => (t.acquired ? 'granted' : t.retryAfterMs))).toEqual(Array(5).fill(10_000))
      await holder.release()
      await Promise.all(waiters)
      // Each waiter's answer after that is its grant. A waiter woken to try when the one before it was granted
      // found that holder and waited for its release: 4 more answers (9), that never reached etcd but cost the core
      // a round. Each grant is handed over with its wake-up (the place followed to first, its lease fresh): no try.
      expect(answers.slice(6).map((t) => t.acquired)).toEqual([true, true, true, true, true])
      // Every key of this line is on the lease the holder's acquire took or refreshed, after `began`. A grant comes
      // with its wake-up while that refresh is under the fresh slack old (500 ms at this TTL); later, the grant is
      // a try that sends a keepalive, which makes the lease fresh again for the next ones.
      if (performance.now() - began < 500) expect(taken.count).toBe(5)
      else expect(taken.count).toBeGreaterThanOrEqual(1)
    } finally {
      await locks.close()
      await backend.close()
      await admin.kv.txn({ success: [{ request_delete_range: { key: start, range_end: end } }] })
    }
  })
})
