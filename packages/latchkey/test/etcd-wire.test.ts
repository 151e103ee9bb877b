/**
 * The etcd backend's own transport (gRPC on node:http2 with hand-written protobuf, `src/backends/etcd/wire/`):
 * the encoding corner cases, and each call the backend makes, against the tests' etcd.
 */
import { type AddressInfo, createServer, type Socket } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { isLeaseGone } from '../src/backends/etcd/etcd-client.js'
import { prefixRange } from '../src/backends/etcd/keys.js'
import { openHttp2EtcdClient } from '../src/backends/etcd/wire/http2-etcd-client.js'
import { ProtoReader, ProtoWriter } from '../src/backends/etcd/wire/protobuf.js'
import { ETCD_URL } from './support/etcd-backend-module.js'

const prefix = `lk-wire-${process.pid}/`
const key = (name: string) => Buffer.from(`${prefix}${name}`)

describe('protobuf', () => {
  it('skips a length-delimited field and reads the field after it', () => {
    // A keepalive answer: a header (skipped) then the lease id. Reading the length must not lose a byte.
    const w = new ProtoWriter().message(1, (h) => h.int64(3, 42)).int64(2, '7587869930281478000')
    const r = new ProtoReader(w.finish())
    const fields: Array<[number, string]> = []
    while (r.next()) {
      if (r.field === 2) fields.push([2, r.int64()])
      else r.skip()
    }
    expect(fields).toEqual([[2, '7587869930281478000']])
  })

  it('round-trips int64 beyond 2^53, negative int64 and nested messages longer than 127 bytes', () => {
    const body = Buffer.alloc(300, 7)
    const w = new ProtoWriter()
      .message(1, (m) => m.bytes(1, body).message(2, (n) => n.int64(1, '-1')))
      .int64(2, '9223372036854775807')
    const r = new ProtoReader(w.finish())
    expect(r.next()).toBe(true)
    const nested = r.nested()
    expect(nested.next() && nested.bytes().equals(body)).toBe(true)
    expect(nested.next()).toBe(true)
    const inner = nested.nested()
    expect(inner.next() && inner.int64()).toBe('-1')
    expect(nested.next()).toBe(false)
    expect(r.next() && r.field === 2 && r.int64()).toBe('9223372036854775807')
    expect(r.next()).toBe(false)
  })

  it('decodes every int64 varint length the same as BigInt arithmetic (2^k, 2^k - 1, their negatives, lease ids)', () => {
    const values: bigint[] = [7587869930281478000n, 0x694d9a8f2c1b3e57n, -(2n ** 63n)]
    for (let k = 0n; k < 64n; k++) values.push(2n ** k, 2n ** k - 1n, -(2n ** k), -(2n ** k) + 1n)
    const w = new ProtoWriter()
    for (const v of values) w.int64(1, v)
    const r = new ProtoReader(w.finish())
    const decoded: string[] = []
    for (const v of values) {
      if (v === 0n) continue // a zero field is omitted
      expect(r.next()).toBe(true)
      decoded.push(r.int64())
    }
    expect(r.next()).toBe(false)
    expect(decoded).toEqual(values.filter((v) => v !== 0n).map((v) => BigInt.asIntN(64, v).toString()))
  })
})

describe('http2 etcd client', () => {
  const client = openHttp2EtcdClient({ hosts: [ETCD_URL], callTimeoutMs: 2_000 })
  afterAll(async () => {
    const all = prefixRange(prefix)
    await client.kv.txn({ success: [{ request_delete_range: { key: all.start, range_end: all.end } }] })
    client.close()
  })

  it('grants, keeps alive and revokes a lease; a put on a revoked lease fails as "lease gone"', async () => {
    const lease = await client.leaseClient.leaseGrant({ TTL: 5 })
    // etcd's lease ids use all 63 bits: they only survive as strings.
    expect(BigInt(lease.ID) > 0n).toBe(true)
    expect(Number(lease.TTL)).toBeGreaterThanOrEqual(5)
    const stream = await client.leaseClient.leaseKeepAlive()
    const answer = new Promise<{ ID: string; TTL: string }>((resolve, reject) => {
      stream.on('data', resolve)
      stream.on('error', reject)
    })
    stream.write({ ID: lease.ID })
    expect(await answer).toEqual({ ID: lease.ID, TTL: lease.TTL, error: '' })
    stream.end()
    expect((await client.leaseClient.leaseTimeToLive({ ID: lease.ID })).TTL).not.toBe('-1')
    await client.leaseClient.leaseRevoke({ ID: lease.ID })
    const put = client.kv.txn({
      success: [{ request_put: { key: key('gone'), value: Buffer.from('x'), lease: lease.ID } }],
    })
    const error = await put.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isLeaseGone(error)).toBe(true)
  })

  it('decodes txn branches: compares on zero values, nested ranges with revisions, delete counts', async () => {
    const k = key('txn')
    const absent = { key: k, target: 'Create' as const, result: 'Equal' as const, create_revision: '0' }
    const put = await client.kv.txn({
      compare: [absent],
      success: [{ request_put: { key: k, value: Buffer.from('v1') } }, { request_range: { key: k } }],
    })
    expect(put.succeeded).toBe(true)
    const kv = put.responses[1]?.response_range?.kvs[0]
    expect(kv?.value.toString()).toBe('v1')
    expect(kv?.create_revision).toBe(put.header.revision)
    // The key exists now: the same compare fails and the failure branch runs.
    const again = await client.kv.txn({
      compare: [absent],
      success: [{ request_put: { key: k, value: Buffer.from('v2') } }],
      failure: [{ request_delete_range: { key: k } }],
    })
    expect(again.succeeded).toBe(false)
    expect(again.responses[0]?.response_delete_range?.deleted).toBe('1')
    const range = await client.kv.range({ key: k })
    expect(range.kvs).toEqual([])
    expect(range.count).toBe('0')
  })

  it('a watch reports deletes in its range only, from its creation on', async () => {
    const range = prefixRange(`${prefix}watched/`)
    const watcher = client.watch().inRange(range).only('delete').watcher()
    await new Promise<void>((resolve) => watcher.on('connected', () => resolve()))
    const deleted: string[] = []
    const seen = new Promise<void>((resolve) =>
      watcher.on('delete', (kv) => {
        deleted.push(kv.key.toString())
        if (kv.key.toString().endsWith('/b')) resolve()
      }),
    )
    for (const name of ['watched/a', 'outside', 'watched/b']) {
      await client.kv.txn({ success: [{ request_put: { key: key(name), value: Buffer.from('x') } }] })
      await client.kv.txn({ success: [{ request_delete_range: { key: key(name) } }] })
    }
    await seen
    expect(deleted).toEqual([`${prefix}watched/a`, `${prefix}watched/b`])
    await watcher.cancel()
  })

  it('a watch created after a read reports the deletes since that read, made before the watch existed', async () => {
    const k = key('after/a')
    await client.kv.txn({ success: [{ request_put: { key: k, value: Buffer.from('x') } }] })
    const read = await client.kv.range({ key: k })
    expect(read.kvs).toHaveLength(1)
    // Deleted between the read and the watch: a watch from now would wait for ever.
    await client.kv.txn({ success: [{ request_delete_range: { key: k } }] })
    const watcher = client
      .watch()
      .inRange({ start: k, end: Buffer.concat([k, Buffer.from([0])]) }, read.header.revision)
      .only('delete')
      .watcher()
    const deleted = await new Promise<string>((resolve) => watcher.on('delete', (kv) => resolve(kv.key.toString())))
    expect(deleted).toBe(k.toString())
    await watcher.cancel()
  })

  it('with several endpoints, a call left unanswered sends the next calls to the next endpoint', async () => {
    // An endpoint that accepts connections and never answers (a hung member): only the deadline ends its calls.
    const sockets = new Set<Socket>()
    const hung = createServer((socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
    })
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve))
    const { port } = hung.address() as AddressInfo
    const both = openHttp2EtcdClient({ hosts: [`http://127.0.0.1:${port}`, ETCD_URL], callTimeoutMs: 300 })
    try {
      await expect(both.kv.range({ key: key('x') })).rejects.toThrow(/DEADLINE_EXCEEDED/)
      expect((await both.kv.range({ key: key('x') })).kvs).toEqual([])
    } finally {
      both.close()
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => hung.close(resolve))
    }
  })

  it('a call to an endpoint that does not answer fails with UNAVAILABLE', async () => {
    const dead = openHttp2EtcdClient({ hosts: ['http://127.0.0.1:1'], callTimeoutMs: 500 })
    try {
      await expect(dead.kv.range({ key: key('x') })).rejects.toThrow(/UNAVAILABLE/)
    } finally {
      dead.close()
    }
  })
})
