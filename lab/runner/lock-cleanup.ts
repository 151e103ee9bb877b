import { SHARED_ETCD_HOSTS, SHARED_ZK_HOSTS } from './shared-servers.js'
import { within } from './within.js'

/** How long a cleanup waits for the server (it may be the one a fault left down). */
const CLEANUP_MS = 15_000

/** Deletes the rows of one lock key from latchkey's SQL tables (they are shared with other users of the server). */
export async function deleteSqlRows(url: string, key: string, tables: string[]): Promise<void> {
  if (url.startsWith('postgres')) {
    const { default: pg } = await import('pg')
    const client = new pg.Client({ connectionString: url.split('?')[0] })
    await client.connect()
    for (const table of tables) {
      await client.query(`DELETE FROM ${table} WHERE lock_key = convert_to($1, 'UTF8')`, [key]).catch(() => {})
    }
    await client.end()
  } else {
    const mysql = await import('mysql2/promise')
    const connection = await mysql.createConnection(url.split('?')[0]!)
    for (const table of tables) await connection.query(`DELETE FROM ${table} WHERE lock_key = ?`, [key]).catch(() => {})
    await connection.end()
  }
}

/** Removes a ZooKeeper subtree the run created (the chroot of its lock). */
export async function removeZkTree(path: string, hosts = SHARED_ZK_HOSTS): Promise<void> {
  const { default: zookeeper } = await import('node-zookeeper-client')
  const client = zookeeper.createClient(hosts)
  try {
    // The client retries a server that is down for ever: bounded, and closed either way.
    await within(
      `ZooKeeper cleanup of ${path} on ${hosts}`,
      CLEANUP_MS,
      new Promise<void>((resolve) => {
        client.once('connected', () => resolve())
        client.connect()
      }),
    )
    // removeRecursive exists in the client (1.1.3) but not in its type definitions.
    const tree = client as unknown as { removeRecursive(path: string, version: number, cb: () => void): void }
    await within(
      `ZooKeeper cleanup of ${path} on ${hosts}`,
      CLEANUP_MS,
      new Promise<void>((resolve) => tree.removeRecursive(path, -1, () => resolve())),
    )
  } finally {
    client.close()
  }
}

/** Deletes the etcd keys under the run's prefix (what its lock left there). */
export async function deleteEtcdPrefix(prefix: string, hosts = SHARED_ETCD_HOSTS): Promise<void> {
  const { Etcd3 } = await import('etcd3')
  const client = new Etcd3({ hosts: hosts.split(',').map((h) => `http://${h}`) })
  try {
    await within(`etcd cleanup of ${prefix} on ${hosts}`, CLEANUP_MS, client.delete().prefix(prefix).exec())
  } finally {
    client.close()
  }
}
