/**
 * A child of a lock node that latchkey did not name (another client's, here one named like kazoo's `Lock`) is an
 * exclusive holder at its place in line, in the default layout: it blocks every kind until it is deleted, and its
 * deletion wakes the latchkey waiter behind it. Before, latchkey ignored such children and granted past them. One
 * made by hand with no sequence number sorts first even when created after a waiter listed the line: the waiter
 * granted on the event alone (zk-first-in-line.ts) then loses its lease once it has held it GUARD_AFTER_MS (100 ms),
 * when a listing checks that grant.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { type ZookeeperBackend, zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { encodeSegment } from '../src/backends/zookeeper/zk-nodes.js'
import { createLocks } from '../src/core/locks.js'
import { countTries } from './support/counted-tries.js'
import { eventually } from './support/eventually.js'
import { cleanupNamespace, rawClient, zkUrl } from './support/zookeeper-env.js'

const namespace = `lkf-${randomUUID().slice(0, 8)}`
const backend: ZookeeperBackend = zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: 6_000 })
const locks = createLocks({ backend, namespace, ttlMs: 10_000 })

afterAll(async () => {
  await locks.close()
  await backend.close()
  await cleanupNamespace(zkUrl(), namespace)
})

describe('zookeeper: children latchkey cannot parse', () => {
  it("a foreign client's sequential node ahead in line excludes every latchkey kind until it is deleted", async () => {
    const name = 'shared'
    const raw = await rawClient(zkUrl())
    try {
      const parent = `/latchkey/${encodeSegment(`${namespace}:${name}`)}`
      const create = (path: string, mode: number) =>
        new Promise<string>((resolve, reject) =>
          raw.mkdirp(parent, (e) =>
            e ? reject(e) : raw.create(path, Buffer.from('10.0.0.7'), mode, (e2, p) => (e2 ? reject(e2) : resolve(p))),
          ),
        )
      // kazoo's Lock: `<uuid hex>__lock__<seq>`, EPHEMERAL_SEQUENTIAL (3); its data is no latchkey lease.
      const foreign = await create(`${parent}/${randomUUID().replace(/-/g, '')}__lock__`, 3)
      expect(await locks.mutex(name).tryAcquire()).toBeUndefined()
      expect(await locks.readWrite(name).read.tryAcquire()).toBeUndefined()
      expect(await locks.readWrite(name).write.tryAcquire()).toBeUndefined()
      expect(await locks.mutex(name).isLocked()).toBe(true)
      const waiting = locks.mutex(name).acquire({ waitMs: 20_000 })
      await new Promise<void>((resolve, reject) => raw.remove(foreign, -1, (e) => (e ? reject(e) : resolve())))
      const lease = await waiting
      await lease.release()
    } finally {
      raw.close()
    }
  }, 30_000)

  it('a child made by hand with no sequence number, created while a waiter is next in line: that waiter granted on the deletion event loses its lease once it has held it 100 ms', async () => {
    const name = 'by-hand'
    const raw = await rawClient(zkUrl())
    const parent = `/latchkey/${encodeSegment(`${namespace}:${name}`)}`
    const byHand = `${parent}/maintenance`
    try {
      const holder = await locks.mutex(name).acquire()
      const tries = countTries(backend)
      const waiting = locks.mutex(name).acquire({ waitMs: 20_000 })
      // Its first try returned: it is next in line, granted on the holder's deletion event from now on.
      await eventually('the waiter is in line', () => tries() === 1)
      // Sorted first in the default layout (no sequence number), though created after the waiter listed the line.
      await new Promise<void>((resolve, reject) =>
        raw.create(byHand, Buffer.alloc(0), 0, (e) => (e ? reject(e) : resolve())),
      )
      await holder.release()
      const lease = await waiting
      // The listing that checks that grant, 100 ms on, shows the hand-made child ahead of it: the lease is lost.
      await eventually('the lease is lost', () => lease.signal.aborted)
      expect(String(lease.signal.reason)).toMatch(/another node ahead/)
      await lease.release().catch(() => undefined)
    } finally {
      await new Promise<void>((resolve) => raw.remove(byHand, -1, () => resolve()))
      raw.close()
    }
  }, 30_000)
})
