/**
 * The znode operations on an owner's node: creating it (protected, so a lost create reply leaves no orphan),
 * writing or emptying its lease, reading its stat, deleting it; and the two generic ones they build on.
 */
import { BackendUnavailableError } from '../../errors.js'
import { isConnectionError, readLong, ZK, type ZkStat, zkCode } from './zk-client.js'
import type { ZkConnection } from './zk-connection.js'
import { canCreate2, sendCreate2 } from './zk-create2.js'
import { NO_NODE, type NodeState, nameOf, type OwnerEntry, waitingNode } from './zk-entry.js'
import { encodeLease } from './zk-nodes.js'

const UNSURE: NodeState = Object.freeze({ is: 'unsure' })

/**
 * Creates the owner's protected EPHEMERAL_SEQUENTIAL node and lists the lock's children in the same round
 * trip (requests of one session are answered in order). After a create whose outcome we did not learn
 * (connection loss: it may have succeeded with its reply lost), look for our `_c_<owner>-` prefix first
 * instead of creating a second node that would leave the first one orphaned in line.
 */
export async function createNode(
  entry: OwnerEntry,
  ttlMs: number | undefined,
  ensureParent: (path: string) => Promise<void>,
): Promise<{ children: string[]; fresh: boolean; stat?: ZkStat | undefined }> {
  const { conn, parent } = entry
  const prefix = entry.layout.prefix(entry.owner, entry.kind, entry.permits)
  for (let attempt = 0; attempt < 4; attempt++) {
    if (entry.node.is === 'unsure') {
      const children = await listChildren(conn, parent)
      const found = children.find((child) => child.startsWith(prefix))
      // Its lease (it was created with one) may date from an earlier call: it is restarted or emptied before use.
      entry.node = found === undefined ? NO_NODE : waitingNode(found)
      if (found !== undefined) return { children, fresh: false }
    }
    // Created with its lease, which starts at the create (ctime >= the caller's send time), by CREATE2 where
    // the client can send it: its reply carries the stat (czxid = token, mtime = lease start), so an uncontended
    // acquire needs neither a second write nor a read.
    const sentAt = performance.now()
    const created = createOwnNode(conn, `${parent}/${prefix}`, nodeData(entry, ttlMs))
    const listed = listChildren(conn, parent)
    listed.catch(() => undefined)
    entry.node = UNSURE
    try {
      const { path, stat } = await created
      const lease =
        stat === undefined || ttlMs === undefined ? undefined : { sentAt, ttlMs, mtime: Number(readLong(stat.mtime)) }
      entry.node = waitingNode(path.slice(path.lastIndexOf('/') + 1), stat?.czxid, ttlMs !== undefined, lease)
      if (stat !== undefined) conn.observe(stat)
      return { children: await listed, fresh: true, stat }
    } catch (error) {
      const code = zkCode((error as { cause?: unknown }).cause ?? error)
      // Left unsure on a connection error: a later call (or drop) looks for the node by its prefix.
      if (code === ZK.NO_NODE) {
        entry.node = NO_NODE
        await ensureParent(parent)
      } else if (code === UNIMPLEMENTED) {
        // A server before 3.5 refused CREATE2 and created nothing: this client sends CREATE from the next round on.
        entry.node = NO_NODE
        refusedCreate2.add(conn.client)
      } else if (!isConnectionError((error as { cause?: unknown }).cause ?? error) || !conn.alive) throw error
    }
  }
  throw new BackendUnavailableError(
    `zookeeper backend at ${conn.server}: could not create a lock node under ${parent}; try again`,
  )
}

/** KeeperException.Code.UNIMPLEMENTED: the answer of a server before 3.5 to CREATE2. */
const UNIMPLEMENTED = -6
/** Clients with a `create2` of their own whose server refused it. */
const refusedCreate2 = new WeakSet<object>()

/** Creates an EPHEMERAL_SEQUENTIAL node: by CREATE2 (path and stat) where possible, else CREATE (path only). */
function createOwnNode(conn: ZkConnection, path: string, data: Buffer): Promise<{ path: string; stat?: ZkStat }> {
  const { client } = conn
  const create2 = refusedCreate2.has(client) ? undefined : client.create2?.bind(client)
  if (create2 !== undefined) return conn.run('create', (cb) => create2(path, data, ZK.EPHEMERAL_SEQUENTIAL, cb))
  if (canCreate2(client))
    return conn.run('create', (cb) => sendCreate2(client, path, data, ZK.EPHEMERAL_SEQUENTIAL, cb))
  return conn.run<{ path: string }>('create', (cb) =>
    client.create(path, data, ZK.EPHEMERAL_SEQUENTIAL, (e, created) => cb(e, { path: created })),
  )
}

/** An owner's node data: its lease, and in Curator's semaphore its permit count (see `encodeLease`). */
function nodeData(entry: OwnerEntry, ttlMs: number | undefined): Buffer {
  return encodeLease(ttlMs, entry.gate === undefined ? undefined : entry.permits)
}

/** Children of a lock node; none when it does not exist. */
export async function listChildren(conn: ZkConnection, parent: string): Promise<string[]> {
  try {
    return await conn.run<string[]>('getChildren', (cb) => conn.client.getChildren(parent, cb))
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return []
    throw error
  }
}

/**
 * Deletes the owner's node when we may not know its name (Curator's findAndDeleteProtectedNode), and the internal
 * mutex node of Curator's semaphore if it has one.
 */
export async function removeOwnNode(entry: OwnerEntry): Promise<void> {
  const { conn, parent } = entry
  if (!conn.alive) return
  const prefix = entry.layout.prefix(entry.owner, entry.kind, entry.permits)
  let name = nameOf(entry)
  if (entry.node.is === 'unsure') name = (await listChildren(conn, parent)).find((child) => child.startsWith(prefix))
  const removed = name === undefined ? Promise.resolve(false) : removeQuietly(conn, `${parent}/${name}`)
  await Promise.all([removed, removeGate(entry)])
}

/** Deletes the internal mutex node of Curator's semaphore (found by its prefix after a lost create reply). */
export async function removeGate(entry: OwnerEntry): Promise<void> {
  const { gate, conn } = entry
  if (gate === undefined || (gate.name === undefined && !gate.unsure)) return
  let name = gate.name
  gate.name = undefined
  if (gate.unsure) {
    const prefix = entry.layout.prefix(entry.owner, 'mutex', 1)
    name = (await listChildren(conn, gate.parent)).find((child) => child.startsWith(prefix))
    gate.unsure = false
  }
  if (name !== undefined) await removeQuietly(conn, `${gate.parent}/${name}`)
}

/**
 * Writes the owner's node: a lease (`ttlMs`) starts or restarts it, `undefined` empties it (a waiter that
 * holds nothing). Resolves the stat (czxid = token, mtime = lease start), or undefined when the node is gone.
 */
export async function writeLease(entry: OwnerEntry, ttlMs: number | undefined): Promise<ZkStat | undefined> {
  const { conn } = entry
  const name = nameOf(entry)
  if (name === undefined) return undefined
  const data = nodeData(entry, ttlMs)
  try {
    const stat = await conn.run<ZkStat>('setData', (cb) => conn.client.setData(`${entry.parent}/${name}`, data, -1, cb))
    conn.observe(stat)
    if (entry.node.is === 'waiting') entry.node.dataLeased = ttlMs !== undefined
    return stat
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return undefined
    throw error
  }
}

/** The stat of the owner's node (a read), or undefined when it is gone. */
export async function statOf(entry: OwnerEntry): Promise<ZkStat | undefined> {
  const { conn } = entry
  const name = nameOf(entry)
  if (name === undefined) return undefined
  try {
    const stat = await conn.run<ZkStat>('exists', (cb) => conn.client.exists(`${entry.parent}/${name}`, cb))
    if (stat === null || stat === undefined) return undefined
    conn.observe(stat)
    return stat
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return undefined
    throw error
  }
}

/** Deletes a node; "no node" and "bad version" (someone else changed it first) are not errors. */
export async function removeQuietly(conn: ZkConnection, path: string, version = -1): Promise<boolean> {
  try {
    await conn.run<void>('remove', (cb) => conn.client.remove(path, version, (e) => cb(e, undefined)))
    return true
  } catch (error) {
    const code = zkCode(error)
    if (code === ZK.NO_NODE || code === ZK.BAD_VERSION || code === ZK.NOT_EMPTY) return false
    throw error
  }
}
