/**
 * `forceRelease` on ZooKeeper: deletes every child of a lock's node (holders and waiters, latchkey's or another
 * client's) and the node itself; for Curator's semaphore also the internal mutex's queue and the recipe's base node.
 */
import type { LockRef } from '../../backend/types.js'
import type { ZkConnection } from './zk-connection.js'
import { lockState } from './zk-inspect.js'
import type { ZkLayout } from './zk-layout.js'
import { removeQuietly } from './zk-node-ops.js'

/** Resolves whether anyone held the lock. */
export async function clearLock(conn: ZkConnection, layout: ZkLayout, root: string, ref: LockRef): Promise<boolean> {
  const parent = layout.nodesParent(root, ref)
  const state = await lockState(conn, parent, Number.MAX_SAFE_INTEGER, layout.parse)
  await Promise.all(state.children.map((child) => removeQuietly(conn, `${parent}/${child}`)))
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
