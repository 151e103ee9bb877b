/**
 * The ZooKeeper backend's operator reads: a lock node's children as holders and waiters, in line order.
 * A holder's token is its node's czxid, its expiry the lease in its data timed from the node's mtime (the
 * server's clock); a waiter's `since` is its node's ctime. Holders whose lease ran out are left out (their node
 * stays until its session ends or a waiter deletes it). `list` reads the children of the root: one node per lock
 * name (URI-encoded; a semaphore's name ends in `%00semaphore`).
 */
import {
  type HolderInfo,
  inspection,
  type ListRequest,
  type LockInspection,
  type LockSummary,
  lockKeysOf,
  summariesOf,
  type WaiterInfo,
} from '../../backend/inspection.js'
import { readLong, ZK, type ZkStat, zkCode } from './zk-client.js'
import type { ZkConnection } from './zk-connection.js'
import { latchkeyZkLayout, type ZkLayout } from './zk-layout.js'
import {
  agreeingLine,
  type ChildParser,
  decodeLease,
  holdersOf,
  type LockNode,
  lineOf,
  parseChild,
} from './zk-nodes.js'

async function children(conn: ZkConnection, path: string): Promise<string[]> {
  try {
    return await conn.run<string[]>('getChildren', (cb) => conn.client.getChildren(path, cb))
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return []
    throw error
  }
}

async function readNode(conn: ZkConnection, path: string): Promise<{ data: Buffer; stat: ZkStat } | undefined> {
  try {
    const [data, stat] = await conn.run<[Buffer, ZkStat]>('getData', (cb) =>
      conn.client.getData(path, (e, d, s) => cb(e, [d, s])),
    )
    return { data, stat }
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return undefined
    throw error
  }
}

/** The holders and waiters of one lock node (a family or a semaphore). */
async function inspectNode(
  conn: ZkConnection,
  parent: string,
  parse: ChildParser,
): Promise<{ holders: HolderInfo[]; waiters: WaiterInfo[] }> {
  // Curator's semaphore keeps its `leases` and `locks` znodes under the lock's path: containers, not holders.
  const names = (await children(conn, parent)).filter((n) => parse === parseChild || !CURATOR_CONTAINERS.has(n))
  const { inForce, line } = agreeingLine(lineOf(names, parse))
  const holding = new Set<LockNode>(holdersOf(line, inForce ?? Number.MAX_SAFE_INTEGER))
  const now = conn.serverNow()
  const read = await Promise.all(line.map((node) => readNode(conn, `${parent}/${node.name}`)))
  const holders: HolderInfo[] = []
  const waiters: WaiterInfo[] = []
  line.forEach((node, i) => {
    const got = read[i]
    if (got === undefined) return
    const owner = decodeURIComponent(node.owner)
    const lease = decodeLease(got.data)
    // Another client's node at a holder's place (Curator writes its host address there): held, with no lease.
    if (holding.has(node) && lease === undefined && !writtenByLatchkey(got.data)) {
      holders.push({ owner, kind: node.kind, token: readLong(got.stat.czxid) })
      return
    }
    if (!holding.has(node) || lease === undefined) {
      // An eligible node without a lease is being granted right now: still waiting, as far as anyone can tell.
      waiters.push({ owner, kind: node.kind, since: Number(readLong(got.stat.ctime)) })
      return
    }
    const expiresAt = Number(readLong(got.stat.mtime)) + lease.ttlMs
    if (expiresAt <= now) return
    holders.push({
      owner,
      kind: node.kind,
      token: readLong(got.stat.czxid),
      expiresAt,
      ...(node.permits === undefined ? {} : { permits: node.permits }),
    })
  })
  return { holders, waiters }
}

const CURATOR_CONTAINERS = new Set(['leases', 'locks'])

/** latchkey writes JSON into its nodes (a lease, a permit count); anything else is another client's. */
function writtenByLatchkey(data: Buffer | undefined): boolean {
  if (data === undefined || data.length === 0) return false
  try {
    return typeof JSON.parse(data.toString('utf8')) === 'object'
  } catch {
    return false
  }
}

/** Both lock nodes of `key`. */
export async function inspectZk(
  conn: ZkConnection,
  root: string,
  key: string,
  layout: ZkLayout = latchkeyZkLayout,
): Promise<LockInspection> {
  const paths = new Set([
    layout.nodesParent(root, { key, kind: 'mutex' }),
    layout.nodesParent(root, { key, kind: 'semaphore' }),
  ])
  const states = await Promise.all([...paths].map((path) => inspectNode(conn, path, layout.parse)))
  return inspection(
    key,
    states.flatMap((s) => s.holders),
    states.flatMap((s) => s.waiters),
  )
}

/** The lock nodes under the root whose names start with the prefix, each inspected. */
export async function listZk(conn: ZkConnection, root: string, request: ListRequest): Promise<LockSummary[]> {
  const names = (await children(conn, root)).flatMap((segment) => {
    try {
      return [decodeURIComponent(segment)]
    } catch {
      return []
    }
  })
  return summariesOf(lockKeysOf(names, request), request.limit, (key) => inspectZk(conn, root, key))
}
