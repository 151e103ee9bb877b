/**
 * Floors: what ZooKeeper and etcd themselves cost per lock+unlock, without any lock library, and the least a fenced,
 * owner-checked Redis lock sends (they cannot wait, uncontended scenarios only: a taken key answers "gave up"), and
 * four that wait: the research's wake-one
 * Redis prototype (proto-blpop.ts), Curator's ZooKeeper recipe on the bare wire protocol (zk-recipe-floor.ts), and
 * the two etcd recipes on latchkey's transport with no library: latchkey's line (etcd-line-floor.ts) and Go's
 * `concurrency.Mutex` (etcd-go-mutex-floor.ts).
 */
import { Etcd3 } from 'etcd3'
import zookeeper from 'node-zookeeper-client'
import type { Contender, FloorName } from './contender.js'
import { etcdGoMutexFloor } from './etcd-go-mutex-floor.js'
import { etcdLineFloor } from './etcd-line-floor.js'
import { openWireSession } from './etcd-wire-session.js'
import { protoBlpop } from './proto-blpop.js'
import { fencedFloor } from './redis-layer-contenders.js'
import { zkRecipeFloor } from './zk-recipe-floor.js'

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

/**
 * The same put-if-absent txn and delete on one shared lease, sent by latchkey's own etcd transport (gRPC on
 * node:http2, hand-written protobuf) instead of etcd3: what etcd costs per pair with the client latchkey uses,
 * so the etcd backend's ratio to it shows the lock's own overhead, not the difference between two clients.
 */
async function etcdTxnWire(url: string, ns: string): Promise<Contender> {
  const { client, lease: id, close } = await openWireSession(url)
  return {
    async acquire(name) {
      const key = Buffer.from(`${ns}/raw/${name}`)
      const r = await client.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: '0' }],
        success: [{ request_put: { key, value: Buffer.from('x'), lease: id } }],
      })
      return r.succeeded
        ? { release: () => client.kv.txn({ success: [{ request_delete_range: { key } }] }) }
        : undefined
    },
    close,
  }
}

/** Opens a floor. */
export async function openFloor(floor: FloorName, url: string, ns: string, ttlMs: number): Promise<Contender> {
  if (floor === 'proto-blpop') return protoBlpop(url, ns, ttlMs)
  if (floor === 'redis-fenced') return fencedFloor(url, ns)
  if (floor === 'etcd-txn-wire') return etcdTxnWire(url, ns)
  if (floor === 'etcd-line') return etcdLineFloor(url, ns)
  if (floor === 'etcd-go') return etcdGoMutexFloor(url, ns)
  if (floor === 'zk-recipe') return zkRecipeFloor(url, ns, ttlMs)
  return floor === 'znode' ? znode(url, ns) : etcdTxn(url, ns)
}
