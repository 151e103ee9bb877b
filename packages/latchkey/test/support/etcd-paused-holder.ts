/**
 * Child process of the paused-holder test: takes a lock, reports its token and holder guard, then (after the
 * parent has paused and resumed it with SIGSTOP / SIGCONT) tries a write to etcd guarded by its ownership.
 * argv: <etcd url> <namespace> <lock name> <ttlMs>
 */
import { createInterface } from 'node:readline'
import { Etcd3 } from 'etcd3'
import { etcdBackend } from '../../src/backends/etcd/index.js'
import { createLocks } from '../../src/core/locks.js'

const [url = '', namespace = '', name = '', ttl = '1000'] = process.argv.slice(2)
const backend = etcdBackend({ hosts: url })
const locks = createLocks({ backend, namespace })
const lease = await locks.mutex(name).acquire({ ttlMs: Number(ttl) })
const guard = await backend.holderGuard({ key: `${namespace}:${name}`, kind: 'mutex', token: lease.token })
process.stdout.write(`${JSON.stringify({ token: lease.token.toString(), key: guard.key })}\n`)

const lines = createInterface({ input: process.stdin })
for await (const line of lines) {
  if (line !== 'write') continue
  const client = new Etcd3({ hosts: url })
  const res = await client.kv.txn({
    compare: [guard.compare],
    success: [{ request_put: { key: Buffer.from(`${namespace}/resource`), value: Buffer.from('child') } }],
  })
  client.close()
  process.stdout.write(`${JSON.stringify({ txnSucceeded: res.succeeded, signalAborted: lease.signal.aborted })}\n`)
  break
}
lines.close()
await locks.close()
await backend.close()
