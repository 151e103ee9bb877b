/**
 * Child process for the SIGSTOP test: takes a lock, reports its token, and on "write" reports that it would
 * now write with that token (the parent's fence guard judges it). Lines of JSON on stdout.
 * argv: namespace, lock name, session timeout ms.
 */
import { createInterface } from 'node:readline'
import { zookeeperBackend } from '../../src/backends/zookeeper/index.js'
import { createLocks } from '../../src/core/locks.js'
import { zkUrl } from './zookeeper-env.js'

const [namespace = 'lkz', name = 'paused', session = '2000'] = process.argv.slice(2)
const say = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`)
}

const backend = zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: Number(session) })
const locks = createLocks({ backend, namespace })
const lease = await locks.mutex(name).acquire({ ttlMs: Number(session) })
lease.signal.addEventListener('abort', () => say({ event: 'lost', reason: (lease.signal.reason as Error).name }))
say({ event: 'acquired', token: lease.token.toString() })

for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'write') say({ event: 'write', token: lease.token.toString(), aborted: lease.signal.aborted })
  if (line === 'exit') break
}
process.stdin.destroy()
await locks.close()
await backend.close()
