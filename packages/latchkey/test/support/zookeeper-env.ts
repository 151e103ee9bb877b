/**
 * Test helpers for the ZooKeeper backend: server addresses from the environment (loopback defaults, as
 * started by scripts/servers/zookeeper.sh), a raw client, and cleanup of the znodes a run created.
 */
import zookeeper from 'node-zookeeper-client'
import type { ZkClient } from '../../src/backends/zookeeper/index.js'
import { encodeSegment } from '../../src/backends/zookeeper/zk-nodes.js'

/** The standalone server (LATCHKEY_ZK_URL, default 127.0.0.1:2181). */
export const zkUrl = (): string => process.env.LATCHKEY_ZK_URL ?? '127.0.0.1:2181'

/** The three-member ensemble's client ports (LATCHKEY_ZK_ENSEMBLE_PORTS, default 2291,2292,2293). */
export const ensemblePorts = (): number[] =>
  (process.env.LATCHKEY_ZK_ENSEMBLE_PORTS ?? '2291,2292,2293').split(',').map(Number)

/** Opens a raw client and waits for its session. */
export async function rawClient(connectString: string, sessionTimeout = 6_000): Promise<zookeeper.Client> {
  const client = zookeeper.createClient(connectString, { sessionTimeout, spinDelay: 100, retries: 0 })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Closed, or it would go on reconnecting to a server that is not there and keep the process alive.
      client.close()
      reject(new Error(`no ZooKeeper session at ${connectString}`))
    }, 10_000)
    client.once('connected', () => {
      clearTimeout(timer)
      resolve()
    })
    client.connect()
  })
  return client
}

/** The raw client typed as the backend's structural client type. */
export const asZkClient = (client: zookeeper.Client): ZkClient => client

const p = <T>(start: (cb: (error: unknown, value: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))))

/** Children of `path`, or [] when it does not exist. */
export async function childrenOf(client: ZkClient, path: string): Promise<string[]> {
  return p<string[]>((cb) => client.getChildren(path, cb)).catch(() => [])
}

/** Deletes `path` and everything under it (ignores nodes that vanish meanwhile). */
export async function removeTree(client: ZkClient, path: string): Promise<void> {
  for (const child of await childrenOf(client, path)) await removeTree(client, `${path}/${child}`)
  await p<void>((cb) => client.remove(path, -1, (e) => cb(e, undefined))).catch(() => undefined)
}

/** Deletes every lock node whose lock name starts with `namespace` (the conformance suite's cleanup). */
export async function cleanupNamespace(connectString: string, namespace: string, root = '/latchkey'): Promise<void> {
  const client = await rawClient(connectString)
  try {
    const prefix = encodeSegment(namespace)
    for (const child of await childrenOf(client, root)) {
      if (child.startsWith(prefix)) await removeTree(client, `${root}/${child}`)
    }
    // The root too, once empty (a non-empty one refuses; the backend recreates it on demand).
    await p<void>((cb) => client.remove(root, -1, (e) => cb(e, undefined))).catch(() => undefined)
  } finally {
    client.close()
  }
}
