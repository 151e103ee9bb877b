/**
 * One `tryAcquire` on an owner's node: create it (or list its lock), decide by the grant rules, grant, or check
 * the holders' leases, keep the place in line and watch the node ahead. Never waits for a release.
 */
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import { readLong, type ZkStat } from './zk-client.js'
import type { ZkConnection } from './zk-connection.js'
import { NO_NODE, type OwnerEntry } from './zk-entry.js'
import { checkHolders } from './zk-holders.js'
import { createNode, listChildren, statOf, writeLease } from './zk-node-ops.js'
import { agreeingLine, lineOf, standingOf } from './zk-nodes.js'
import { type WatchHub, watchNodes } from './zk-watch.js'

/** What an attempt needs from the backend. */
export interface AttemptDeps {
  ensureParent(conn: ZkConnection, path: string): Promise<void>
  readonly hub: WatchHub
  /** Forgets the entry and deletes its node. */
  drop(entry: OwnerEntry): Promise<void>
  /** Schedules the deletion of a lock's node directory that may now be empty (see `ZkParents.emptied`). */
  emptied(path: string): void
}

/** Tries once (a few rounds when the line changes under us); see the module comment. */
export async function attempt(entry: OwnerEntry, request: AcquireRequest, deps: AttemptDeps): Promise<AcquireResult> {
  let retryAfterMs: number | undefined
  for (let round = 0; round < 8; round++) {
    let fresh = false
    let leased: Promise<ZkStat | undefined> | undefined
    let children: string[]
    const node = entry.node
    if (node.is === 'none' || node.is === 'unsure') {
      const created = await createNode(entry, request.ttlMs, (p) => deps.ensureParent(entry.conn, p))
      ;({ children, fresh } = created)
    } else {
      // Woken by our watch, it is most likely our turn: start the lease in the same round trip as the
      // listing (one session's requests are answered in order); if it was not our turn, it is emptied
      // below. Not for a semaphore waiter woken by its predecessor's write: it only moved up in line.
      if (node.is === 'waiting') {
        if (node.woken && !node.wakeOnChange) leased = writeLease(entry, request.ttlMs)
        node.woken = false
      }
      leased?.catch(() => undefined)
      children = await listChildren(entry.conn, entry.parent)
    }
    let line = lineOf(children, entry.layout.parse)
    const ours = entry.node
    if (ours.is !== 'waiting' && ours.is !== 'held') continue // not reached: a created node has a name
    if (line.every((n) => n.name !== ours.name)) {
      entry.node = NO_NODE // our node was deleted (forceRelease): take a new place in line
      continue
    }
    if (request.kind === 'semaphore') {
      const agreeing = agreeingLine(line)
      // Our node is in line, so a count is in force: the first node's. Another one than ours: withdraw.
      if (agreeing.inForce !== undefined && agreeing.inForce !== request.permits) {
        await deps.drop(entry)
        return { acquired: false, permitsInForce: agreeing.inForce }
      }
      line = agreeing.line
    }
    const index = line.findIndex((n) => n.name === ours.name)
    const standing = standingOf(line, index, request.permits)
    if (standing.eligible) {
      const stat = fresh ? statOf(entry) : (leased ?? writeLease(entry, request.ttlMs))
      return grant(entry, request, await stat)
    }
    await leased
    const holders = await checkHolders(entry, standing.blockers)
    if (holders === 'changed') continue
    retryAfterMs = holders.retryAfterMs
    if (!keeps(entry, request)) {
      await deps.drop(entry)
      return { acquired: false, retryAfterMs }
    }
    // A waiting node holds no lease: nobody may judge it expired while it waits its turn.
    if (ours.is === 'waiting' && ours.dataLeased && (await writeLease(entry, undefined)) === undefined) continue
    if (entry.node.is === 'waiting') entry.node.wakeOnChange = standing.wakeOnChange
    if (await watchNodes(entry, standing.watch, deps.hub)) continue
    return { acquired: false, retryAfterMs }
  }
  return { acquired: false, retryAfterMs: retryAfterMs ?? 1 }
}

/**
 * Grants with the stat of the owner's node holding its lease: read for a node created in this call (its
 * lease started at the create, after the caller's send time), written (restarted now) otherwise.
 */
export function grant(entry: OwnerEntry, request: AcquireRequest, stat: ZkStat | undefined): AcquireResult {
  const { node } = entry
  if (stat === undefined || (node.is !== 'waiting' && node.is !== 'held')) {
    entry.node = NO_NODE
    return { acquired: false, retryAfterMs: 1 }
  }
  const lease = { mtime: Number(readLong(stat.mtime)), ttlMs: request.ttlMs }
  entry.node = { is: 'held', name: node.name, lease, onLeaseLost: node.is === 'held' ? node.onLeaseLost : undefined }
  return { acquired: true, token: readLong(stat.czxid) }
}

/**
 * Whether a waiter keeps its node (its place in line) between tries: fair and write locks always (the core
 * queues them); every other kind while a subscription is bound, because the core then keeps calling and
 * closes that subscription when it gives up (`onSubClose` deletes the node). Plain tries never keep it.
 */
export function keeps(entry: OwnerEntry, request: AcquireRequest): boolean {
  return request.queue || entry.sub !== undefined
}
