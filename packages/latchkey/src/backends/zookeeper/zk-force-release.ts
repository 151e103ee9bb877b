/**
 * `forceRelease` on ZooKeeper: deletes every child of a lock's node (holders and waiters, latchkey's or another
 * client's) and the node itself; for Curator's semaphore also the internal mutex's queue and the recipe's base node.
 */
import type { LockRef } from '../../backend/types.js'
import type { ZkConnection } from './zk-connection.js'
import { lockState } from './zk-inspect.js'
import type { ZkLayout } from './zk-layout.js'
import { removeQuietly } from './zk-node-ops.js'
import { lineOf } from './zk-nodes.js'

/** Resolves whether anyone held the lock. */
export async function clearLock(conn: ZkConnection, layout: ZkLayout, root: string, ref: LockRef): Promise<boolean> {
  const parent = layout.nodesParent(root, ref)
  const state = await lockState(conn, parent, Number.MAX_SAFE_INTEGER, layout.parse)
  // From the back of the line to its head, sent in that order on one session (ZooKeeper applies a session's
  // requests, and delivers their watch events, in order): a waiter granted by the deletion of the node ahead of it
  // (zk-first-in-line.ts) has by then been told of its own node's deletion, so it takes a new place instead of
  // holding on a node that is about to go.
  const backToFront = lineOf(state.children, layout.parse).reverse()
  await Promise.all(backToFront.map((node) => removeQuietly(conn, `${parent}/${node.name}`)))
  await removeQuietly(conn, parent)
  const gate = layout.gateParent(root, ref)
  if (gate !== undefined) {
    const queued = await lockState(conn, gate, Number.MAX_SAFE_INTEGER, layout.parse)
    await Promise.all(queued.children.map((child) => removeQuietly(conn, `${gate}/${child}`)))
    await removeQuietly(conn, gate)
    await removeQuietly(conn, layout.lockPath(root, ref)) // refused while anything else lives under it
  }
  return state.live > 0
}
