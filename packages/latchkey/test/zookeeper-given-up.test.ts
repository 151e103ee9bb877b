/**
 * A waiter the core gives up while one of its tries is still out (its deadline came first, or the caller aborted)
 * keeps nothing: giving up deletes its node, and the try, which then finds that node gone, took a new place in
 * line that nobody deleted. That node stayed until the session ended, ahead of every later contender (found by the
 * grant-rules model: a tryAcquire refused on a free lock). Driven through the Backend contract, so the order is
 * exact: the try is sent, then the subscription closes before the try has run.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import type { AcquireRequest } from '../src/backend/types.js'
import { type ZookeeperBackend, zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { cleanupNamespace, zkUrl } from './support/zookeeper-env.js'

const namespace = `lkg-${randomUUID().slice(0, 8)}`
const backend: ZookeeperBackend = zookeeperBackend({ connectString: zkUrl() })

afterAll(async () => {
  await backend.close()
  await cleanupNamespace(zkUrl(), namespace)
})

const request = (key: string, kind: 'mutex' | 'fair', waiting: boolean): AcquireRequest => ({
  key,
  kind,
  owner: randomUUID(),
  ttlMs: 10_000,
  permits: 1,
  lockDelayMs: 0,
  queue: waiting && kind === 'fair',
  queueTtlMs: 5_000,
})

describe('zookeeper: a wait given up with a try still out', () => {
  for (const kind of ['mutex', 'fair'] as const) {
    it(`${kind}: the try keeps no node, and the lock is free once its holder releases`, async () => {
      const key = `${namespace}:given-up-${kind}`
      const holder = request(key, kind, false)
      expect((await backend.tryAcquire(holder)).acquired).toBe(true)
      const waiter = request(key, kind, true)
      const sub = backend.subscribe(waiter, waiter.owner)
      expect((await backend.tryAcquire(waiter)).acquired).toBe(false)
      expect((await backend.inspect(key)).waiters).toHaveLength(1)
      // The next try goes out, and the core gives the wait up before it has run (as at a deadline).
      const late = backend.tryAcquire(waiter)
      sub.close()
      await backend.leaveQueue(waiter)
      expect((await late).acquired).toBe(false)
      const state = await backend.inspect(key)
      expect(state.waiters).toEqual([])
      expect(state.holders).toHaveLength(1)
      expect(await backend.release({ key, kind, owner: holder.owner })).toBe(true)
      // Free: nothing of the waiter is left ahead of a newcomer.
      const next = request(key, kind, false)
      expect((await backend.tryAcquire(next)).acquired).toBe(true)
      expect(await backend.release({ key, kind, owner: next.owner })).toBe(true)
    })
  }
})
