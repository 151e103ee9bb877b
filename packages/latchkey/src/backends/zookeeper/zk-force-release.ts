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
  // Waiters first, the holders last (one session's requests are applied in order): a waiter granted on the event
  // of the node ahead being deleted learns of its own node's deletion first (zk-first-in-line.ts).
  const backToFront = lineOf(state.children, layout.parse).reverse()
  await Promise.all(backToFront.map((child) => removeQuietly(conn, `${parent}/${child.name}`)))
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
