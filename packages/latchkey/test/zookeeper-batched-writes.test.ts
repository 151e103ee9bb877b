/**
 * The ZooKeeper backend's socket writes (zk-batched-writes.ts): requests queued in one turn while others are in
 * flight leave in one write of at most 8; one request at a time is written at once, never held.
 */
import { randomUUID } from 'node:crypto'
import type zookeeper from 'node-zookeeper-client'
import { afterAll, describe, expect, it } from 'vitest'
import { zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { createLocks } from '../src/core/locks.js'
import { asZkClient, cleanupNamespace, rawClient, zkUrl } from './support/zookeeper-env.js'

const namespace = `lkbw-${randomUUID().slice(0, 8)}`
const PING = 11

interface Writes {
  /** Requests queued (pings excluded). */
  requests: number
  /** Writes handed to the kernel: one per `_write`, one per `_writev` (however many requests it carries). */
  kernelWrites: number
  /** Requests (frames) in each kernel write. */
  batches: number[]
  /** For each request queued while none was in flight: whether it reached the kernel before `queue` returned. */
  writtenAtOnce: boolean[]
}

/** The length-prefixed frames in `chunks`: the requests one kernel write carries. */
function frames(chunks: Buffer[]): number {
  const all = Buffer.concat(chunks)
  let n = 0
  for (let at = 0; at + 4 <= all.length; at += 4 + all.readInt32BE(at)) n++
  return n
}

/** A raw client whose requests and socket writes are counted. */
async function countedClient(): Promise<{ client: zookeeper.Client; writes: Writes }> {
  const client = await rawClient(zkUrl())
  const writes: Writes = { requests: 0, kernelWrites: 0, batches: [], writtenAtOnce: [] }
  type Socket = {
    _write(chunk: Buffer, ...a: unknown[]): unknown
    _writev(chunks: { chunk: Buffer }[], cb: unknown): unknown
  }
  type Manager = { socket: Socket; pendingQueue: unknown[]; queue(r: unknown, c: unknown): void }
  const manager = (client as unknown as { connectionManager: Manager }).connectionManager
  const queue = manager.queue.bind(manager)
  manager.queue = (request, cb) => {
    if ((request as { header?: { type?: number } | null }).header?.type === PING) return queue(request, cb)
    writes.requests++
    const idle = manager.pendingQueue.length === 0
    const before = writes.kernelWrites
    queue(request, cb)
    if (idle) writes.writtenAtOnce.push(writes.kernelWrites > before)
  }
  const socket = manager.socket
  const write = socket._write.bind(socket)
  const writev = socket._writev.bind(socket)
  socket._write = (chunk, ...a) => {
    writes.kernelWrites++
    writes.batches.push(frames([chunk]))
    return write(chunk, ...a)
  }
  socket._writev = (chunks, cb) => {
    writes.kernelWrites++
    writes.batches.push(frames(chunks.map((c) => c.chunk)))
    return writev(chunks, cb)
  }
  return { client, writes }
}

const clients: zookeeper.Client[] = []
afterAll(async () => {
  for (const c of clients) c.close()
  await cleanupNamespace(zkUrl(), namespace)
})

describe('zookeeper: batched socket writes', () => {
  it('one lock at a time: a request sent while none is in flight goes out at once, and no write is shared', async () => {
    const { client, writes } = await countedClient()
    clients.push(client)
    const locks = createLocks({ backend: zookeeperBackend({ client: asZkClient(client) }), namespace })
    await (await locks.mutex('one').acquire()).release()
    for (let i = 0; i < 5; i++) await (await locks.mutex('one').acquire()).release()
    // An acquire sends its listing right behind its create: the create is written at once, the listing alone.
    expect(writes.writtenAtOnce.length).toBeGreaterThanOrEqual(6)
    expect(writes.writtenAtOnce.every((atOnce) => atOnce)).toBe(true)
    expect(writes.kernelWrites).toBe(writes.requests)
    await locks.close()
  })

  it('many locks at once: requests of one turn share writes, at most 8 to a write, all answered in order', async () => {
    const { client, writes } = await countedClient()
    clients.push(client)
    const locks = createLocks({ backend: zookeeperBackend({ client: asZkClient(client) }), namespace })
    // The lock nodes first, so that the measured round is creates, listings and deletes only.
    const keys = Array.from({ length: 40 }, (_, i) => `many-${i}`)
    await Promise.all(keys.map(async (k) => (await locks.mutex(k).acquire()).release()))
    const before = { ...writes, batches: writes.batches.length }
    const leases = await Promise.all(keys.map((k) => locks.mutex(k).acquire()))
    // Each lease has its own token: every reply reached the request it answers.
    expect(new Set(leases.map((l) => l.token)).size).toBe(keys.length)
    await Promise.all(leases.map((l) => l.release()))
    const requests = writes.requests - before.requests
    const kernelWrites = writes.kernelWrites - before.kernelWrites
    expect(requests).toBeGreaterThanOrEqual(3 * keys.length)
    expect(kernelWrites).toBeLessThan(requests / 2)
    expect(Math.max(...writes.batches.slice(before.batches))).toBeLessThanOrEqual(8)
    await locks.close()
  })
})
