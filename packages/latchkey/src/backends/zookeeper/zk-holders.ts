/**
 * The expiry check a contender runs on the holders blocking it: a lease is judged by the server's clock (node
 * mtime + the TTL in its data), and an expired holder's node is deleted, version-checked so a renewal wins.
 */
import { readLong, ZK, type ZkStat, zkCode } from './zk-client.js'
import type { ZkConnection } from './zk-connection.js'
import type { OwnerEntry } from './zk-entry.js'
import { removeQuietly } from './zk-node-ops.js'
import { decodeLease, type LockNode } from './zk-nodes.js'

/** A holder's node as read for the expiry check. */
export interface HolderInfo {
  readonly path: string
  readonly version: number
  /** Server time after which the lease has run out; undefined for a node that holds no lease yet. */
  readonly expiresAt: number | undefined
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
  if (blockers.length === 0) return { retryAfterMs: undefined }
  return judgeHolders(entry, await readHolders(entry, blockers))
}

/** The blocking holders' nodes as read for the expiry check: undefined for one gone. */
export function readHolders(
  entry: OwnerEntry,
  blockers: readonly Pick<LockNode, 'name'>[],
): Promise<(HolderInfo | undefined)[]> {
  return Promise.all(blockers.map((b) => readHolder(entry.conn, `${entry.parent}/${b.name}`)))
}

/** The expiry check of `checkHolders` on holders already read (`readHolders`). */
export async function judgeHolders(
  entry: OwnerEntry,
  infos: readonly (HolderInfo | undefined)[],
): Promise<'changed' | { retryAfterMs: number | undefined }> {
  const { conn } = entry
  if (infos.length === 0) return { retryAfterMs: undefined }
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
