/** Watching the nodes a waiter (or a holder, its own node) waits on, routed through one client watcher. */
import { ZK, type ZkEvent, zkCode } from './zk-client.js'
import { leaseLost, type OwnerEntry } from './zk-entry.js'
import type { LockNode } from './zk-nodes.js'

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
 *
 * `deleteOnly` watches for the deletion alone, with getChildren: a lock node has no children, and ZooKeeper
 * fires a node's child watch when the node itself is deleted (NodeDeleted), never when its data changes. A waiter
 * then sleeps through the lease write of the node ahead (woken, it starts its lease) instead of being told and
 * watching again, and a holder's own watch through its renewals. A node already gone answers "no node" here too.
 */
export async function watchNodes(
  entry: OwnerEntry,
  nodes: readonly LockNode[],
  hub: WatchHub,
  parent = entry.parent,
  deleteOnly = false,
): Promise<boolean> {
  const { conn } = entry
  for (const node of nodes) {
    if (entry.watching.has(node.name)) continue
    const path = `${parent}/${node.name}`
    entry.watching.add(node.name)
    hub.arm(path, entry)
    try {
      if (deleteOnly) await conn.run('getChildren', (cb) => conn.client.getChildren(path, hub.watcher, cb))
      else await conn.run('getData', (cb) => conn.client.getData(path, hub.watcher, (e) => cb(e, undefined)))
    } catch (error) {
      entry.watching.delete(node.name)
      hub.disarm(path, entry)
      if (zkCode(error) === ZK.NO_NODE) return true
      throw error
    }
  }
  return false
}

/**
 * Watches the children of the entry's parent (Curator's semaphore waits for any change among the leases). Resolves
 * the children listed with the watch set.
 */
export async function watchChildren(entry: OwnerEntry, hub: WatchHub): Promise<string[]> {
  const { conn, parent } = entry
  const key = parent.slice(parent.lastIndexOf('/') + 1)
  const armed = !entry.watching.has(key)
  if (armed) {
    entry.watching.add(key)
    hub.arm(parent, entry)
  }
  try {
    return await conn.run<string[]>('getChildren', (cb) =>
      armed ? conn.client.getChildren(parent, hub.watcher, cb) : conn.client.getChildren(parent, cb),
    )
  } catch (error) {
    if (armed) {
      entry.watching.delete(key)
      hub.disarm(parent, entry)
    }
    if (zkCode(error) === ZK.NO_NODE) return []
    throw error
  }
}

/**
 * Watches a holder's own node for its deletion (its renewals do not fire the watch), so that its deletion behind the
 * holder's back (forceRelease, or a contender judging its lease expired) tells the lease at once. A node already
 * gone tells it now. Set by `watchLease` once the lease is no longer young (`GUARD_AFTER_MS`).
 */
export function guardLease(entry: OwnerEntry, hub: WatchHub): void {
  const { node } = entry
  if (node.is !== 'held') return
  const own = { name: node.name, owner: entry.owner, kind: entry.kind, order: '' }
  void watchNodes(entry, [own], hub, entry.parent, true).then(
    (gone) => gone && leaseLost(entry, DELETED),
    () => undefined,
  )
}

/** Why a holder whose node was deleted behind its back lost its lease. */
export const DELETED = 'its lock node was deleted (forceRelease, or its TTL ran out and a contender took over)'
