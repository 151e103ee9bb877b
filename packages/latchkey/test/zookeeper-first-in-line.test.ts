/**
 * A waiter woken by the deletion of the last node ahead of it is granted with no listing (zk-first-in-line.ts): the
 * only node ahead at its listing, or a holder of the same backend right ahead that this backend released; but only
 * while its own node stands: its own node's deletion, told first, takes that grant away.
 */
import { randomUUID } from 'node:crypto'
import type zookeeper from 'node-zookeeper-client'
import { afterAll, describe, expect, it } from 'vitest'
import { zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { createLocks } from '../src/core/locks.js'
import { eventually } from './support/eventually.js'
import { asZkClient, childrenOf, cleanupNamespace, rawClient, recordedClient, zkUrl } from './support/zookeeper-env.js'

const namespace = `lkf-${randomUUID().slice(0, 8)}`
const clients: zookeeper.Client[] = []
afterAll(async () => {
  for (const c of clients) c.close()
  await cleanupNamespace(zkUrl(), namespace)
})

describe('zookeeper: the waiter first in line', () => {
  it('is not granted on a node deleted before the node ahead: it takes a new place and holds on that', async () => {
    const raw = await rawClient(zkUrl())
    clients.push(raw)
    const holderBackend = zookeeperBackend({ connectString: zkUrl() })
    const waiterBackend = zookeeperBackend({ connectString: zkUrl() })
    const a = createLocks({ backend: holderBackend, namespace, ttlMs: 30_000 })
    const b = createLocks({ backend: waiterBackend, namespace, ttlMs: 30_000 })
    const first = await a.mutex('guarded').acquire()
    const lost: string[] = []
    first.signal.addEventListener('abort', () => lost.push('holder'))
    const parent = waiterBackend.lockPath({ key: `${namespace}:guarded`, kind: 'mutex' })
    const waiting = b.mutex('guarded').acquire({ waitMs: 10_000 })
    await eventually('the waiter is in line', async () => (await childrenOf(raw, parent)).length === 2)
    const [holderNode, waiterNode] = (await childrenOf(raw, parent)).sort((x, y) =>
      x.slice(-10).localeCompare(y.slice(-10)),
    )
    // Give the waiter time to arm its watches (its own node's first): its watch on the node ahead is the last request.
    await eventually('the waiter watches', () =>
      (waiterBackend as unknown as { waiters: { watched: Map<string, unknown> } }).waiters.watched.has(
        `${parent}/${holderNode}`,
      ),
    )
    // Both nodes go in one transaction, the waiter's first: its own deletion's event comes before the other's.
    await new Promise<void>((resolve, reject) =>
      raw
        .transaction()
        .remove(`${parent}/${waiterNode}`, -1)
        .remove(`${parent}/${holderNode}`, -1)
        .commit((error) => (error ? reject(error) : resolve())),
    )
    const second = await waiting
    // Granted on a node that stands (a new one), not on the deleted one.
    const line = await childrenOf(raw, parent)
    expect(line).toHaveLength(1)
    expect(line[0]).not.toBe(waiterNode)
    expect(second.token).toBeGreaterThan(first.token)
    await eventually('the holder is told', () => lost.length === 1)
    await second.release()
    await a.close()
    await b.close()
  })

  it('behind a holder of its own backend, it is granted on that release with no request, though others were ahead', async () => {
    const recorded = await recordedClient()
    clients.push(recorded.client)
    const locks = createLocks({
      backend: zookeeperBackend({ client: asZkClient(recorded.client) }),
      namespace,
      ttlMs: 30_000,
    })
    const first = await locks.mutex('in-process').acquire()
    const second = locks.mutex('in-process').acquire({ waitMs: 10_000 })
    await eventually('the second waits', () => recorded.sent.length >= 3)
    const third = locks.mutex('in-process').acquire({ waitMs: 10_000 })
    // The third lists two nodes ahead: it watches its own node, then the second's (a node of its own backend).
    await eventually('the third waits', () => recorded.sent.filter((r) => r === 'getChildren').length >= 7)
    await first.release()
    const held = await second
    recorded.sent.length = 0
    await held.release()
    const last = await third
    // The second's release deleted the node right ahead of the third, a holder, which was first: nothing but that delete.
    expect(recorded.sent).toEqual(['delete'])
    expect(last.token).toBeGreaterThan(held.token)
    await last.release()
    await locks.close()
  })
})
