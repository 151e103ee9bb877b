/**
 * latchkey's own ZooKeeper client (src/backends/zookeeper/wire) against the real server, beside
 * node-zookeeper-client as the independent observer: its operations and error codes, one-shot watches, a multi,
 * and its session across faults (through a TCP proxy): a cut connection resumes the same session and re-sets its
 * watches, a silent server is left for a new connection, a session the server expired is reported, and a close
 * deletes the session's ephemeral nodes at once.
 */
import { randomUUID } from 'node:crypto'
import type zookeeper from 'node-zookeeper-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZkWireClient } from '../src/backends/zookeeper/wire/zk-wire-client.js'
import { ZK, type ZkEvent, type ZkStat } from '../src/backends/zookeeper/zk-client.js'
import { eventually } from './support/eventually.js'
import { rawClient, removeTree, zkUrl } from './support/zookeeper-env.js'
import { ZkProxy } from './support/zookeeper-proxy.js'

/** CreateMode.EPHEMERAL. */
const EPHEMERAL = 1
const base = `/lkwire-${randomUUID().slice(0, 8)}`
let observer: zookeeper.Client
const clients: ZkWireClient[] = []

/** Runs one callback-style call as a promise. */
const p = <T>(start: (cb: (error: unknown, value: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))))

/** A connected wire client (closed after the suite). */
async function open(connectString = zkUrl(), sessionTimeoutMs = 6_000): Promise<ZkWireClient> {
  const client = new ZkWireClient(connectString, sessionTimeoutMs)
  clients.push(client)
  const connected = new Promise<void>((resolve) => client.once('connected', resolve))
  client.connect()
  await connected
  return client
}

const observed = (path: string): Promise<ZkStat | null> => p((cb) => observer.exists(path, cb))

/** Sets a data watch on `path` that records its events in `events`. */
const watchData = (c: ZkWireClient, path: string, events: ZkEvent[]): Promise<void> =>
  p((cb) =>
    c.getData(
      path,
      (e) => events.push(e),
      (e) => cb(e, undefined),
    ),
  )

beforeAll(async () => {
  observer = await rawClient(zkUrl())
  await p((cb) => observer.create(base, cb))
})

afterAll(async () => {
  for (const client of clients) client.close()
  await removeTree(observer, base)
  observer.close()
})

describe('zookeeper wire client', () => {
  it('creates (create2 with the stat), reads, writes and deletes; errors carry ZooKeeper’s codes', async () => {
    const c = await open()
    const created = await p<{ path: string; stat: ZkStat }>((cb) =>
      c.create2(`${base}/n-`, Buffer.from('a'), ZK.EPHEMERAL_SEQUENTIAL, cb),
    )
    expect(created.path).toMatch(new RegExp(`^${base}/n-\\d{10}$`))
    const seen = await observed(created.path)
    expect(created.stat.czxid).toEqual(seen?.czxid)
    const read = await new Promise<{ data: Buffer; stat: ZkStat }>((resolve, reject) =>
      c.getData(created.path, (e, data, stat) => (e ? reject(e) : resolve({ data, stat }))),
    )
    expect(read.data.toString()).toBe('a')
    const written = await p<ZkStat>((cb) => c.setData(created.path, Buffer.from('bb'), 0, cb))
    expect(written.version).toBe(1)
    await expect(p((cb) => c.setData(created.path, null, 0, cb))).rejects.toMatchObject({
      code: ZK.BAD_VERSION,
      name: 'BAD_VERSION',
    })
    expect(await p<string[]>((cb) => c.getChildren(base, cb))).toContain(created.path.slice(base.length + 1))
    const plain = await p<string>((cb) => c.create(`${base}/plain`, Buffer.alloc(0), ZK.PERSISTENT, cb))
    expect(plain).toBe(`${base}/plain`)
    await expect(p((cb) => c.create(`${base}/plain`, Buffer.alloc(0), ZK.PERSISTENT, cb))).rejects.toMatchObject({
      code: ZK.NODE_EXISTS,
    })
    await p<void>((cb) => c.remove(plain, -1, (e) => cb(e, undefined)))
    expect(await p<ZkStat | null>((cb) => c.exists(plain, cb))).toBeNull()
    await expect(p((cb) => c.getChildren(plain, cb))).rejects.toMatchObject({ code: ZK.NO_NODE })
    await expect(p((cb) => c.remove(plain, -1, (e) => cb(e, undefined)))).rejects.toMatchObject({ code: ZK.NO_NODE })
  })

  it('xids wrap to 1 after 2^31 - 1, as the Java client’s do, and requests go on', async () => {
    const c = await open()
    const requests = (c as unknown as { requests: { xid: number } }).requests
    requests.xid = 0x7fffffff - 1
    for (let i = 0; i < 4; i++) expect(await p<ZkStat | null>((cb) => c.exists('/', cb))).not.toBeNull()
    expect(requests.xid).toBe(3)
  })

  it('watches fire once: data on a write and on the deletion, children on a child created', async () => {
    const c = await open()
    const path = `${base}/watched`
    await p((cb) => observer.create(path, cb))
    const dataEvents: ZkEvent[] = []
    const childEvents: ZkEvent[] = []
    await watchData(c, path, dataEvents)
    await p((cb) => c.getChildren(path, (e) => childEvents.push(e), cb))
    await p((cb) => observer.setData(path, Buffer.from('1'), cb))
    await eventually('the data watch fired', () => dataEvents.length === 1)
    await p((cb) => observer.create(`${path}/kid`, cb))
    await eventually('the child watch fired', () => childEvents.length === 1)
    // One-shot: a second write and a second child tell nobody until watched again.
    await p((cb) => observer.setData(path, Buffer.from('2'), cb))
    await p((cb) => observer.remove(`${path}/kid`, (e) => cb(e, undefined)))
    await watchData(c, path, dataEvents)
    await p((cb) => observer.remove(path, (e) => cb(e, undefined)))
    await eventually('the deletion fired the new data watch', () => dataEvents.length === 2)
    expect(dataEvents).toEqual([
      { type: ZK.NODE_DATA_CHANGED, path },
      { type: ZK.NODE_DELETED, path },
    ])
    expect(childEvents).toEqual([{ type: ZK.NODE_CHILDREN_CHANGED, path }])
  })

  it('a multi commits its ops at one zxid, or none of them with the failing op’s code', async () => {
    const c = await open()
    const parent = `${base}/tx`
    await p((cb) => observer.create(parent, cb))
    const results = await p<readonly { type: number; path?: string; stat?: ZkStat }[]>((cb) =>
      c
        .transaction()
        .create(`${parent}/a-`, Buffer.from('x'), ZK.EPHEMERAL_SEQUENTIAL)
        .setData(parent, Buffer.alloc(0), -1)
        .commit(cb),
    )
    const created = results[0]?.path as string
    expect((await observed(created))?.czxid).toEqual(results[1]?.stat?.mzxid)
    await expect(
      p((cb) =>
        c
          .transaction()
          .create(`${parent}/b`, Buffer.alloc(0), ZK.PERSISTENT)
          .setData(`${parent}/missing`, null, -1)
          .commit(cb),
      ),
    ).rejects.toMatchObject({ code: ZK.NO_NODE })
    expect(await observed(`${parent}/b`)).toBeNull()
  })

  describe('through a proxy', () => {
    let proxy: ZkProxy
    beforeAll(async () => {
      proxy = await new ZkProxy(Number(zkUrl().split(':')[1] ?? 2181)).start()
    })
    afterAll(() => proxy.close())

    it('a cut connection resumes the same session: its ephemeral node stays, its watch fires for a change made meanwhile', async () => {
      const c = await open(proxy.url)
      const id = c.getSessionId().toString('hex')
      const path = `${base}/resumed`
      await p((cb) => c.create(path, Buffer.alloc(0), EPHEMERAL, cb))
      const events: ZkEvent[] = []
      await watchData(c, path, events)
      const disconnected = new Promise((resolve) => c.once('disconnected', resolve))
      const reconnected = new Promise((resolve) => c.once('connected', resolve))
      // Silent first, so the write's event cannot reach the old connection; then cut: only SetWatches can tell it.
      proxy.blackhole()
      await p((cb) => observer.setData(path, Buffer.from('meanwhile'), cb))
      const accepted = proxy.accepted
      proxy.heal()
      await disconnected
      await reconnected
      expect(proxy.accepted).toBe(accepted + 1)
      expect(c.getSessionId().toString('hex')).toBe(id)
      await eventually('the watch fired after the reconnect', () => events.length === 1)
      expect(events).toEqual([{ type: ZK.NODE_DATA_CHANGED, path }])
      expect(await observed(path)).not.toBeNull()
    })

    it('a silent server is left for a new connection within 2/3 of the session timeout; the session survives', async () => {
      const c = await open(proxy.url, 3_000)
      const id = c.getSessionId().toString('hex')
      const accepted = proxy.accepted
      proxy.blackhole()
      await eventually('the client dialled again on its own', () => proxy.accepted > accepted, 5_000)
      const reconnected = new Promise((resolve) => c.once('connected', resolve))
      proxy.heal()
      await reconnected
      expect(c.getSessionId().toString('hex')).toBe(id)
      expect(await p<ZkStat | null>((cb) => c.exists('/', cb))).not.toBeNull()
    })

    it('a session the server expired meanwhile is reported: "expired", and every call fails with SESSION_EXPIRED', async () => {
      const c = await open(proxy.url, 2_000)
      const path = `${base}/expiring`
      await p((cb) => c.create(path, Buffer.alloc(0), EPHEMERAL, cb))
      const expired = new Promise((resolve) => c.once('expired', resolve))
      proxy.blackhole()
      // The server expires the session (its ephemeral node goes) once it has heard nothing for the timeout.
      await eventually('the server expired the session', async () => (await observed(path)) === null, 10_000)
      proxy.heal()
      await expired
      expect(c.getState().name).toBe('EXPIRED')
      await expect(p((cb) => c.exists('/', cb))).rejects.toMatchObject({ code: ZK.SESSION_EXPIRED })
    })
  })

  it('close ends the session at once: its ephemeral nodes are gone when it reports disconnected', async () => {
    const c = await open()
    const path = `${base}/closing`
    await p((cb) => c.create(path, Buffer.alloc(0), EPHEMERAL, cb))
    const gone = new Promise((resolve) => c.once('disconnected', resolve))
    c.close()
    await gone
    expect(await observed(path)).toBeNull()
    await expect(p((cb) => c.exists('/', cb))).rejects.toMatchObject({ code: ZK.CONNECTION_LOSS })
  })
})
