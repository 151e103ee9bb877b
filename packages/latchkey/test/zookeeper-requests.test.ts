/**
 * What the ZooKeeper backend sends per lock, counted on its client's request queue (pings excluded): an
 * uncontended mutex costs what Curator's InterProcessMutex costs (create, list, delete); a waiter's watch on the
 * node ahead fires on its deletion only; a waiter next in line is granted on that deletion's event with no request
 * (zk-first-in-line.ts), and one further back lists the line when the node two ahead goes, so that it is next in
 * line before its turn; a woken waiter that must list does so before it writes its lease, so the grant never waits
 * for that write to commit.
 */
import { randomUUID } from 'node:crypto'
import type zookeeper from 'node-zookeeper-client'
import { afterAll, describe, expect, it } from 'vitest'
import { zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { createLocks } from '../src/core/locks.js'
import { eventually } from './support/eventually.js'
import { asZkClient, cleanupNamespace, rawClient, zkUrl } from './support/zookeeper-env.js'

const namespace = `lkq-${randomUUID().slice(0, 8)}`
const PING = 11
/** Op codes: create, delete, exists, getData, setData, getChildren2, create2. */
const NAMES: Record<number, string> = {
  1: 'create',
  2: 'delete',
  3: 'exists',
  4: 'getData',
  5: 'setData',
  12: 'getChildren',
  15: 'create2',
}

/**
 * A raw client whose requests are recorded by name, in the order they are queued; while `answers.recorded` is set,
 * their answers too (`<name> answered`, as each reply is handed to the client).
 */
async function recordedClient(): Promise<{ client: zookeeper.Client; sent: string[]; answers: { recorded: boolean } }> {
  const client = await rawClient(zkUrl())
  const sent: string[] = []
  const answers = { recorded: false }
  const manager = (client as unknown as { connectionManager: { queue(r: unknown, cb: unknown): unknown } })
    .connectionManager
  const queue = manager.queue.bind(manager)
  manager.queue = (request: unknown, cb: unknown) => {
    const header = (request as { header?: { type?: number; wireType?: number } | null }).header
    const type = header?.wireType ?? header?.type
    if (type === undefined || type === PING) return queue(request, cb)
    const name = NAMES[type] ?? `op${type}`
    sent.push(name)
    if (!answers.recorded || typeof cb !== 'function') return queue(request, cb)
    return queue(request, (...reply: unknown[]) => {
      sent.push(`${name} answered`)
      return cb(...reply)
    })
  }
  return { client, sent, answers }
}

const clients: zookeeper.Client[] = []

/**
 * Locks `a` on a plain backend, and locks `b` on a recorded client whose backend's tries (the core's `tryAcquire`
 * calls) are recorded in `sent` too, in the same order as its requests.
 */
async function withRecordedTries() {
  const recorded = await recordedClient()
  clients.push(recorded.client)
  const a = createLocks({ backend: zookeeperBackend({ connectString: zkUrl() }), namespace })
  const backend = zookeeperBackend({ client: asZkClient(recorded.client) })
  const tryAcquire = backend.tryAcquire.bind(backend)
  backend.tryAcquire = (request) => {
    recorded.sent.push('tryAcquire')
    return tryAcquire(request)
  }
  const b = createLocks({ backend, namespace, ttlMs: 30_000 })
  return { sent: recorded.sent, answers: recorded.answers, a, b }
}
/**
 * Resolves once the requests `locks` queued before it are answered and their replies handled: counting requests
 * queued is not enough before a release on another session, which the server can apply before it reads a watch
 * still in our socket's buffer (that watch then finds the node gone, and its waiter takes another path). ZooKeeper
 * answers one session's requests in order, so one more read on the same session comes back after them.
 */
async function answered(locks: ReturnType<typeof createLocks>, name: string): Promise<void> {
  await locks.inspect(name)
}

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

  it('a waiter next in line sleeps through the renewals ahead, and is granted on the deletion event with no request', async () => {
    const holder = await recordedClient()
    const waiter = await recordedClient()
    clients.push(holder.client, waiter.client)
    const a = createLocks({ backend: zookeeperBackend({ client: asZkClient(holder.client) }), namespace })
    const waiterBackend = zookeeperBackend({ client: asZkClient(waiter.client) })
    const b = createLocks({ backend: waiterBackend, namespace, ttlMs: 30_000 })
    const first = await a.mutex('handoff').acquire()
    const askedAt = Date.now()
    const waiting = b.mutex('handoff').acquire({ waitMs: 10_000 })
    // In line: its node created with its lease, the holder's lease read, a watch on the node ahead and one on its own
    // node (for their deletion only: a getChildren on each). Its own lease is young, so it keeps it (no write).
    await eventually('the waiter watches the holder and its own node', () => waiter.sent.length >= 5)
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
    // The deletion of the only node ahead decided the grant, on the lease of its create: nothing sent (a hold that
    // lasts past GUARD_AFTER_MS is checked against a listing then, zk-first-in-line.ts)...
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
    // Woken without a lease: granted on the deletion event, ahead of the lease write it sends (and no listing).
    expect(waiter.sent).toEqual(['setData'])
    await second.release()
    await a.close()
    await b.close()
  })

  it("a session hears only the deletions it waits for, its own node's once it waited: not joiners, nor an uncontended holder's own delete", async () => {
    const watched = await recordedClient()
    clients.push(watched.client)
    // Every watch event this session receives, by type (2 NodeDeleted, 4 NodeChildrenChanged) and path.
    const events: string[] = []
    const manager = (watched.client as unknown as { connectionManager: { watcherManager: { emit(e: unknown): void } } })
      .connectionManager.watcherManager
    const emit = manager.emit.bind(manager)
    manager.emit = (event: unknown) => {
      const { type, path } = event as { type: number; path: string }
      events.push(`${type} ${path}`)
      emit(event)
    }
    const a = createLocks({ backend: zookeeperBackend({ connectString: zkUrl() }), namespace })
    const b = createLocks({ backend: zookeeperBackend({ client: asZkClient(watched.client) }), namespace })
    const c = createLocks({ backend: zookeeperBackend({ connectString: zkUrl() }), namespace })
    // ZooKeeper sends a session's watch events before the replies to its later requests: after one more read on
    // this session, an event that the writes before it triggered has arrived.
    const ordered = () => b.inspect('quiet')
    // Uncontended: released well within GUARD_AFTER_MS, the holder never watched its node or the lock node.
    await (await b.mutex('quiet').acquire()).release()
    await ordered()
    expect(events).toEqual([])
    const first = await a.mutex('quiet').acquire()
    const waiting = b.mutex('quiet').acquire({ waitMs: 10_000 })
    await eventually('the waiter watches the holder', async () => (await b.inspect('quiet')).waiters.length === 1)
    // A contender joining behind it (another process) tells this session nothing.
    const third = c.mutex('quiet').acquire({ waitMs: 10_000 })
    await eventually('the third contender is in line', async () => (await b.inspect('quiet')).waiters.length === 2)
    expect(events).toEqual([])
    await first.release()
    const second = await waiting
    expect(events).toHaveLength(1)
    expect(events[0]).toMatch(/^2 \//)
    // Waiting, it watched its own node too (zk-first-in-line.ts): its own delete fires that watch; the line's change
    // behind it and the third contender's grant fire nothing here.
    await second.release()
    await (await third).release()
    await ordered()
    expect(events).toHaveLength(2)
    expect(events[1]).toMatch(/^2 \//)
    expect(events[1]).not.toBe(events[0])
    await a.close()
    await b.close()
    await c.close()
  })

  it('a waiter two behind lists the line when the holder goes, with no try of the core, then is granted on the next deletion with no request', async () => {
    const { sent, answers, a, b } = await withRecordedTries()
    const first = await a.mutex('listed-ahead').acquire()
    const middle = a.mutex('listed-ahead').acquire({ waitMs: 10_000 })
    await eventually('the second contender waits', async () => (await a.inspect('listed-ahead')).waiters.length === 1)
    const waiting = b.mutex('listed-ahead').acquire({ waitMs: 10_000 })
    // Third in line: created, listed, watches the node ahead, the holder (two ahead) and its own node.
    await eventually('the waiter watches both nodes ahead and its own', () => sent.length >= 6)
    expect(sent).toEqual(['tryAcquire', 'create2', 'getChildren', 'getChildren', 'getChildren', 'getChildren'])
    await answered(b, 'listed-ahead')
    sent.length = 0
    answers.recorded = true
    await first.release()
    const second = await middle
    // The holder's deletion moved it up without a try of the core: it listed the line from the event, found one node
    // ahead and read the new holder's lease (the first waiter judges it), sent with the listing, not after its answer.
    await eventually('the waiter reads the new holder', () => sent.length >= 4)
    expect(sent).toEqual(['getChildren', 'getData', 'getChildren answered', 'getData answered'])
    answers.recorded = false
    sent.length = 0
    await second.release()
    const third = await waiting
    expect(third.token).toBeGreaterThan(second.token)
    // Granted on the deletion of that node, with no request.
    expect(sent).toEqual(['tryAcquire'])
    await third.release()
    await a.close()
    await b.close()
  })

  it("in one process, the next waiter's grant comes before the listing of the waiter two behind that the same deletion readies", async () => {
    const { sent, a, b } = await withRecordedTries()
    const first = await a.mutex('grant-first').acquire()
    const second = b.mutex('grant-first').acquire({ waitMs: 10_000 })
    await eventually('the second contender waits', async () => (await a.inspect('grant-first')).waiters.length === 1)
    const third = b.mutex('grant-first').acquire({ waitMs: 10_000 })
    await eventually('the third contender waits', async () => (await a.inspect('grant-first')).waiters.length === 2)
    // The third watches the holder's node (two ahead) as well as the second's, on the same session as the second.
    await eventually('the third watches both nodes ahead and its own', () => sent.length >= 12)
    await answered(b, 'grant-first')
    sent.length = 0
    void second.then(() => sent.push('second granted'))
    await first.release()
    const held = await second
    await eventually('the third reads the new holder', () => sent.includes('getData'))
    // The holder's deletion woke both; the second is granted on the event with no request, and only then does the
    // third list the line and read the new holder's lease (that listing readies the next handoff, a hold later).
    expect(sent).toEqual(['tryAcquire', 'second granted', 'getChildren', 'getData'])
    await held.release()
    await (await third).release()
    await a.close()
    await b.close()
  })

  it('a waiter is not granted when the node ahead of it gives up: it lists, and waits for the holder', async () => {
    const a = createLocks({ backend: zookeeperBackend({ connectString: zkUrl() }), namespace })
    const b = createLocks({ backend: zookeeperBackend({ connectString: zkUrl() }), namespace })
    const first = await a.mutex('gives-up').acquire()
    const giveUp = new AbortController()
    const middle = a.mutex('gives-up').acquire({ waitMs: 10_000, signal: giveUp.signal })
    await eventually('the second contender waits', async () => (await a.inspect('gives-up')).waiters.length === 1)
    let granted = false
    const waiting = b.mutex('gives-up').acquire({ waitMs: 10_000 })
    waiting.then(
      () => {
        granted = true
      },
      () => undefined,
    )
    await eventually('the third contender waits', async () => (await a.inspect('gives-up')).waiters.length === 2)
    giveUp.abort()
    await expect(middle).rejects.toThrow()
    // The third contender is now next in line behind the holder, and not granted while it holds.
    await eventually('one waiter left', async () => (await a.inspect('gives-up')).waiters.length === 1)
    expect(granted).toBe(false)
    const state = await a.inspect('gives-up')
    expect(state.holders).toHaveLength(1)
    await first.release()
    const next = await waiting
    expect(next.token).toBeGreaterThan(first.token)
    await next.release()
    await a.close()
    await b.close()
  })
})
