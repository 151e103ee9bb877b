/** Watching the nodes a waiter (or a holder, its own node) waits on, routed through one client watcher. */
import { ZK, type ZkEvent, zkCode } from './zk-client.js'
import type { OwnerEntry } from './zk-entry.js'
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
