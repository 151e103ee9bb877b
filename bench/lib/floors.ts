/**
 * Floors: what ZooKeeper and etcd themselves cost per lock+unlock, without any lock library (they cannot
 * wait, uncontended scenarios only: a taken key answers "gave up"), and the research's wake-one Redis
 * prototype (proto-blpop.ts), which waits.
 */
import { Etcd3 } from 'etcd3'
import zookeeper from 'node-zookeeper-client'
import type { Contender, FloorName } from './contender.js'
import { protoBlpop } from './proto-blpop.js'

const p = <T>(start: (cb: (error: unknown, value: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))))

/** Creates and deletes one EPHEMERAL_SEQUENTIAL znode per pair, under a base node removed on close. */
async function znode(connectString: string, ns: string): Promise<Contender> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 10_000 })
  await new Promise<void>((resolve) => {
    client.once('connected', () => resolve())
    client.connect()
  })
  const base = `/${ns}-${process.pid}`
  await p((cb) => client.create(base, cb))
  return {
    async acquire(key) {
      const path = await p<string>((cb) =>
        client.create(`${base}/${key}-`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, cb),
      )
      return { release: () => p<void>((cb) => client.remove(path, (e) => cb(e, undefined))) }
    },
    async close() {
      await p<void>((cb) => client.remove(base, (e) => cb(e, undefined))).catch(() => undefined)
      client.close()
    },
  }
}

/** A put-if-absent txn and a delete per pair, on one shared lease (Go's concurrency.Mutex, uncontended). */
async function etcdTxn(url: string, ns: string): Promise<Contender> {
  const client = new Etcd3({ hosts: url })
  const lease = client.lease(10)
  const id = await lease.grant()
  return {
    async acquire(name) {
      const key = Buffer.from(`${ns}/raw/${name}`)
      const r = await client.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key, value: Buffer.from('x'), lease: id } }],
      })
      return r.succeeded ? { release: () => client.kv.deleteRange({ key }) } : undefined
    },
    async close() {
      await lease.revoke()
      client.close()
    },
  }
}

/** Opens a floor. */
export async function openFloor(floor: FloorName, url: string, ns: string, ttlMs: number): Promise<Contender> {
  if (floor === 'proto-blpop') return protoBlpop(url, ns, ttlMs)
  return floor === 'znode' ? znode(url, ns) : etcdTxn(url, ns)
}
