/**
 * What the ZooKeeper backend sends per lock, counted on its client's request queue (pings excluded): an
 * uncontended mutex costs what Curator's InterProcessMutex costs (create, list, delete); a waiter's watch on the
 * node ahead fires on its deletion only; a waiter woken by the only node ahead going is granted with no request; a
 * woken waiter that must write its lease lists first, so the grant never waits for that write to commit.
 */
import { randomUUID } from 'node:crypto'
import type zookeeper from 'node-zookeeper-client'
import { afterAll, describe, expect, it } from 'vitest'
import { zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { createLocks } from '../src/core/locks.js'
import { eventually } from './support/eventually.js'
import { asZkClient, childrenOf, cleanupNamespace, rawClient, recordedClient, zkUrl } from './support/zookeeper-env.js'

const namespace = `lkq-${randomUUID().slice(0, 8)}`
const clients: zookeeper.Client[] = []
afterAll(async () => {
  for (const c of clients) c.close()
  await cleanupNamespace(zkUrl(), namespace)
})

describe('zookeeper: requests per lock', () => {
  it('an uncontended mutex sends create2, getChildren and delete, nothing else', async () => {
    const { client, sent } = await recordedClient()
    clients.push(client)
    const locks = createLocks({ backend: zookeeperBackend({ client: asZkClient(client) }), namespace, ttlMs: 10_000 })
    // The first acquisition also creates the lock's parent nodes; the second finds them.
    await (await locks.mutex('uncontended').acquire()).release()
    sent.length = 0
    const lease = await locks.mutex('uncontended').acquire()
    expect(lease.token).toBeGreaterThan(0n)
    await lease.release()
    expect(sent).toEqual(['create2', 'getChildren', 'delete'])
    await locks.close()
  })

  it('a waiter sleeps through the renewals ahead; woken by the one node ahead going, it is granted with no request', async () => {
    const holder = await recordedClient()
    const waiter = await recordedClient()
    clients.push(holder.client, waiter.client)
    const a = createLocks({ backend: zookeeperBackend({ client: asZkClient(holder.client) }), namespace })
    const waiterBackend = zookeeperBackend({ client: asZkClient(waiter.client) })
    const b = createLocks({ backend: waiterBackend, namespace, ttlMs: 30_000 })
    const first = await a.mutex('handoff').acquire()
    const askedAt = Date.now()
    const waiting = b.mutex('handoff').acquire({ waitMs: 10_000 })
    // In line: its node created with its lease, the holder's lease read, a deletion watch on its own node, then one
    // on the node ahead (each a getChildren on the node). Its own lease is young, so it keeps it (no write).
    await eventually('the waiter watches the holder', () => waiter.sent.length >= 5)
    expect(waiter.sent).toEqual(['create2', 'getChildren', 'getData', 'getChildren', 'getChildren'])
    waiter.sent.length = 0
    // The holder renewing (a write to its node) does not fire that watch: the waiter sends nothing.
    // One read on the waiter's own session after that write: ZooKeeper delivers a session's watch events and replies
    // in order, so a watch event of the renewal would have come (and its re-watch been sent) before the answer.
    await first.extend()
    await waiterBackend.isLocked({ key: `${namespace}:probe`, kind: 'mutex', permits: 1 })
    await new Promise((resolve) => setImmediate(resolve))
    expect(waiter.sent).toEqual(['getChildren'])
    waiter.sent.length = 0
    await first.release()
    const second = await waiting
    expect(second.token).toBeGreaterThan(first.token)
    // The deletion of the only node ahead decided the grant, on the lease of its create: nothing listed or written
    // (its own node's watch, armed before, is the holder's guard)...
    expect(waiter.sent).toEqual([])
    // ...and that lease is timed from the create, sent after `askedAt`, not from the grant.
    expect(second.expiresAt).toBeLessThanOrEqual(askedAt + 30_000 + 1_000)
    await second.release()
    await a.close()
    await b.close()
  })

  it('a waiter whose lease from its create grows old empties it while it waits, and writes a new one when woken', async () => {
    const waiter = await recordedClient()
    clients.push(waiter.client)
    const a = createLocks({ backend: zookeeperBackend({ connectString: zkUrl() }), namespace })
    const b = createLocks({ backend: zookeeperBackend({ client: asZkClient(waiter.client) }), namespace, ttlMs: 900 })
    const first = await a.mutex('old-lease').acquire()
    const waiting = b.mutex('old-lease').acquire({ waitMs: 10_000 })
    // A third of its 900 ms TTL after its create, the waiter's node gives up the lease it was created with: a node
    // that waits holds no lease old enough to be judged expired once it is first.
    await eventually('the waiter empties its old lease', () => waiter.sent.includes('setData'))
    expect(waiter.sent).toEqual(['create2', 'getChildren', 'getData', 'getChildren', 'getChildren', 'setData'])
    waiter.sent.length = 0
    await first.release()
    const second = await waiting
    expect(second.token).toBeGreaterThan(first.token)
    // Woken without a lease: the listing decides, the lease write follows it on the session.
    expect(waiter.sent.slice(0, 2)).toEqual(['getChildren', 'setData'])
    await second.release()
    await a.close()
    await b.close()
  })

  it('on a line it just waited for, a create lists without the lock node watch; granted at once, the holder watches its own node', async () => {
    const recorded = await recordedClient()
    const raw = await rawClient(zkUrl())
    clients.push(recorded.client, raw)
    const a = createLocks({ backend: zookeeperBackend({ connectString: zkUrl() }), namespace })
    const backend = zookeeperBackend({ client: asZkClient(recorded.client) })
    const b = createLocks({ backend, namespace, ttlMs: 30_000 })
    const first = await a.mutex('busy').acquire()
    const waiting = b.mutex('busy').acquire({ waitMs: 10_000 })
    await eventually('the waiter watches the holder', () => recorded.sent.length >= 5)
    await first.release()
    await (await waiting).release()
    recorded.sent.length = 0
    // Uncontended now, but it waited here a moment ago: the listing sets no watch on the lock node, so the holder
    // guards its lease with a deletion watch on its own node.
    const lease = await b.mutex('busy').acquire()
    await eventually('the holder watches its own node', () => recorded.sent.length >= 3)
    expect(recorded.sent).toEqual(['create2', 'getChildren', 'getChildren'])
    // That watch tells it when its node is deleted behind its back.
    const parent = backend.lockPath({ key: `${namespace}:busy`, kind: 'mutex' })
    const [node] = await childrenOf(raw, parent)
    await new Promise<void>((resolve, reject) =>
      raw.remove(`${parent}/${node}`, -1, (error) => (error ? reject(error) : resolve())),
    )
    await eventually('the holder is told', () => lease.signal.aborted)
    await a.close()
    await b.close()
  })
})
