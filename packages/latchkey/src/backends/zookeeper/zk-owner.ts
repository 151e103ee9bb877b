/**
 * The per-owner state the backend keeps between calls, and the znode operations on it: creating the
 * protected node, granting, checking holders' leases for expiry, watching the predecessor, deleting.
 */
import type { LockKind } from '../../backend/types.js'
import { BackendUnavailableError } from '../../errors.js'
import { isConnectionError, readLong, ZK, type ZkEvent, type ZkStat, zkCode } from './zk-client.js'
import type { ZkConnection } from './zk-connection.js'
import { decodeLease, encodeLease, type LockNode, nodePrefix } from './zk-nodes.js'
import type { ZkSubscription } from './zk-subscription.js'

const EMPTY = Buffer.alloc(0)

/** One lease attempt's node: from its first `tryAcquire` to its release, leaveQueue or session loss. */
export interface OwnerEntry {
  readonly owner: string
  /** `stateKey` of the lock: semaphores live apart from the mutex / read-write family. */
  readonly key: string
  readonly kind: LockKind
  /** A semaphore's permit count, written into its node's name. */
  readonly permits: number
  /** Path of the lock node (the parent of the owner's node). */
  readonly parent: string
  readonly conn: ZkConnection
  /** The owner's child name once created. */
  name: string | undefined
  /** A create was sent whose outcome we did not learn: the node may exist under our prefix. */
  unsure: boolean
  /** The node's data holds a lease (it was created with one, or granted); a waiting node must be emptied. */
  dataLeased: boolean
  granted: boolean
  /** Server time (ms) of the last grant or renewal, and the TTL then written. */
  lease: { mtime: number; ttlMs: number } | undefined
  sub: ZkSubscription | undefined
  /** Child names this entry has a live watch on. */
  readonly watching: Set<string>
  wakeOnChange: boolean
  /** A watch woke this waiter since its last try (so its next try is likely to be granted). */
  woken: boolean
  /** Set by `watchLease`: called once when the held lease is lost behind the holder's back. */
  onLeaseLost: ((reason: string) => void) | undefined
}

/** Tells a holder's `watchLease` listener, once, that its lease is gone. */
export function leaseLost(entry: OwnerEntry, reason: string): void {
  const listener = entry.onLeaseLost
  entry.onLeaseLost = undefined
  listener?.(reason)
}

/** A holder's node as read for the expiry check. */
interface HolderInfo {
  readonly path: string
  readonly version: number
  /** Server time after which the lease has run out; undefined for a node that holds no lease yet. */
  readonly expiresAt: number | undefined
}

/**
 * Creates the owner's protected EPHEMERAL_SEQUENTIAL node and lists the lock's children in the same round
 * trip (requests of one session are answered in order). After a create whose outcome we did not learn
 * (connection loss: it may have succeeded with its reply lost), look for our `_c_<owner>-` prefix first
 * instead of creating a second node that would leave the first one orphaned in line.
 */
export async function createNode(
  entry: OwnerEntry,
  ttlMs: number,
  ensureParent: (path: string) => Promise<void>,
): Promise<{ children: string[]; fresh: boolean }> {
  const { conn, parent } = entry
  const prefix = nodePrefix(entry.owner, entry.kind, entry.permits)
  for (let attempt = 0; attempt < 4; attempt++) {
    if (entry.unsure) {
      const children = await listChildren(conn, parent)
      entry.name = children.find((child) => child.startsWith(prefix))
      entry.unsure = false
      // Its lease (if it has one) may date from an earlier call: it is restarted or emptied before use.
      if (entry.name !== undefined) return { children, fresh: false }
    }
    // Created with its lease, which starts at the create (ctime >= the caller's send time): an uncontended
    // acquire then needs only a read for the token, not a second write.
    entry.dataLeased = true
    const created = conn.run<string>('create', (cb) =>
      conn.client.create(`${parent}/${prefix}`, encodeLease(ttlMs), ZK.EPHEMERAL_SEQUENTIAL, cb),
    )
    const listed = listChildren(conn, parent)
    listed.catch(() => undefined)
    entry.unsure = true
    try {
      const path = await created
      entry.unsure = false
      entry.name = path.slice(path.lastIndexOf('/') + 1)
      return { children: await listed, fresh: true }
    } catch (error) {
      if (zkCode(error) === ZK.NO_NODE) {
        entry.unsure = false
        await ensureParent(parent)
      } else if (!isConnectionError((error as { cause?: unknown }).cause ?? error) || !conn.alive) throw error
    }
  }
  throw new BackendUnavailableError(
    `zookeeper backend at ${conn.server}: could not create a lock node under ${parent}; try again`,
  )
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

/** Deletes the owner's node when we may not know its name (Curator's findAndDeleteProtectedNode). */
export async function removeOwnNode(entry: OwnerEntry): Promise<void> {
  const { conn, parent } = entry
  if (!conn.alive) return
  if (entry.name === undefined && entry.unsure) {
    const prefix = nodePrefix(entry.owner, entry.kind, entry.permits)
    entry.name = (await listChildren(conn, parent)).find((child) => child.startsWith(prefix))
  }
  if (entry.name !== undefined) await removeQuietly(conn, `${parent}/${entry.name}`)
}

/**
 * Writes the owner's node: a lease (`ttlMs`) starts or restarts it, `undefined` empties it (a waiter that
 * holds nothing). Resolves the stat (czxid = token, mtime = lease start), or undefined when the node is gone.
 */
export async function writeLease(entry: OwnerEntry, ttlMs: number | undefined): Promise<ZkStat | undefined> {
  const { conn } = entry
  const data = ttlMs === undefined ? EMPTY : encodeLease(ttlMs)
  try {
    const stat = await conn.run<ZkStat>('setData', (cb) =>
      conn.client.setData(`${entry.parent}/${entry.name}`, data, -1, cb),
    )
    conn.observe(stat)
    entry.dataLeased = ttlMs !== undefined
    return stat
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return undefined
    throw error
  }
}

/** The stat of the owner's node (a read), or undefined when it is gone. */
export async function statOf(entry: OwnerEntry): Promise<ZkStat | undefined> {
  const { conn } = entry
  try {
    const stat = await conn.run<ZkStat>('exists', (cb) => conn.client.exists(`${entry.parent}/${entry.name}`, cb))
    if (stat === null || stat === undefined) return undefined
    conn.observe(stat)
    return stat
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return undefined
    throw error
  }
}

/**
 * Reads the blocking holders' leases. Expired ones (judged by the server's clock: node mtime + TTL against
 * a fresh server timestamp) are deleted, version-checked so a renewal in between wins; then `'changed'`.
 * Otherwise resolves how long until the first lease could run out.
 */
export async function checkHolders(
  entry: OwnerEntry,
  blockers: readonly LockNode[],
): Promise<'changed' | { retryAfterMs: number | undefined }> {
  const { conn } = entry
  if (blockers.length === 0) return { retryAfterMs: undefined }
  const infos = await Promise.all(blockers.map((b) => readHolder(conn, `${entry.parent}/${b.name}`)))
  if (infos.some((i) => i === undefined)) return 'changed'
  const leased = (infos as HolderInfo[]).filter((i) => i.expiresAt !== undefined)
  if (leased.length === 0) return { retryAfterMs: undefined }
  let now = conn.serverNow()
  if (leased.some((i) => (i.expiresAt as number) <= now)) {
    now = await serverTime(conn, entry.parent)
    const expired = leased.filter((i) => (i.expiresAt as number) <= now)
    for (const info of expired) await removeQuietly(conn, info.path, info.version)
    if (expired.length > 0) return 'changed'
  }
  const soonest = Math.min(...leased.map((i) => (i.expiresAt as number) - now))
  return { retryAfterMs: Math.max(1, Math.ceil(soonest) + 2) }
}

async function readHolder(conn: ZkConnection, path: string): Promise<HolderInfo | undefined> {
  try {
    const [data, stat] = await conn.run<[Buffer, ZkStat]>('getData', (cb) =>
      conn.client.getData(path, (error, d, s) => cb(error, [d, s])),
    )
    const lease = decodeLease(data)
    const expiresAt = lease === undefined ? undefined : Number(readLong(stat.mtime)) + lease.ttlMs
    return { path, version: stat.version, expiresAt }
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return undefined
    throw error
  }
}

/** The server's clock now: the mtime of a write to the lock node (its data is unused and unwatched). */
async function serverTime(conn: ZkConnection, parent: string): Promise<number> {
  try {
    const stat = await conn.run<ZkStat>('setData', (cb) => conn.client.setData(parent, Buffer.alloc(0), -1, cb))
    conn.observe(stat)
    return Number(readLong(stat.mtime))
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return Number.NEGATIVE_INFINITY
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

/** Routes watch events to the entries waiting on a path (one client watcher function for all paths). */
export interface WatchHub {
  readonly watcher: (event: ZkEvent) => void
  arm(path: string, entry: OwnerEntry): void
  disarm(path: string, entry: OwnerEntry): void
}

/**
 * Watches `nodes` with getData: a node already gone answers "no node" and leaves no watch behind (an
 * `exists` watch on a vanished sequential node would wait forever for a creation). Resolves true when one
 * of them is already gone, so the caller re-evaluates at once instead of waiting.
 */
export async function watchNodes(entry: OwnerEntry, nodes: readonly LockNode[], hub: WatchHub): Promise<boolean> {
  const { conn } = entry
  for (const node of nodes) {
    if (entry.watching.has(node.name)) continue
    const path = `${entry.parent}/${node.name}`
    entry.watching.add(node.name)
    hub.arm(path, entry)
    try {
      await conn.run('getData', (cb) => conn.client.getData(path, hub.watcher, (e) => cb(e, undefined)))
    } catch (error) {
      entry.watching.delete(node.name)
      hub.disarm(path, entry)
      if (zkCode(error) === ZK.NO_NODE) return true
      throw error
    }
  }
  return false
}
