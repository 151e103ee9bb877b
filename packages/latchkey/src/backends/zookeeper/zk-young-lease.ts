/**
 * A waiter of an exclusive lock keeps the lease its node was created with while that lease is young, so that the
 * release that makes it first can hand it the lock with no write of its own (Curator's handoff: the woken waiter
 * only lists the line).
 *
 * Why this is safe: a contender judges only the holders blocking it (`standingOf`: the first node of an exclusive
 * line), never a waiting node, so a waiting node's lease matters only from the moment it becomes first. Granted
 * then on the lease of its create, the holder times that lease from the create's send time (`grantedAt`), which is
 * no later than the create's mtime that contenders count from: its own deadline comes first. Only a young lease is
 * used that way: a lease older than a third of its TTL is emptied by a timer while the node waits (a node holding
 * no lease is never judged expired), and a woken waiter that finds its lease old (a timer held up by a busy event
 * loop) writes a new one and waits for that write before it takes the grant, as before. The core renews a lease
 * granted this way a third of the TTL after `grantedAt`, as any other.
 */
import type { CreatedLease, NodeState, OwnerEntry, WaitingNode } from './zk-entry.js'
import { writeLease } from './zk-node-ops.js'
import { EXCLUSIVE } from './zk-nodes.js'

/** The part of the TTL after which a waiting node's lease from its create counts as old. */
const YOUNG_PART = 1 / 3

/** The lease `node` was created with, while its data still holds it and it is young; else undefined. */
export function youngLease(entry: OwnerEntry, node: WaitingNode, ttlMs: number): CreatedLease | undefined {
  const { created } = node
  // Only an exclusive kind's waiting node is never judged by a contender before it is first in line.
  if (!EXCLUSIVE.has(entry.kind) || !node.dataLeased || created === undefined) return undefined
  return performance.now() - created.sentAt < ttlMs * YOUNG_PART ? created : undefined
}

/**
 * Keeps the young lease of a waiting node (true), emptying it by a timer once it turns old; false when it has no
 * young lease to keep (the caller empties the node now if it holds one).
 */
export function keepYoungLease(entry: OwnerEntry, node: WaitingNode, ttlMs: number): boolean {
  const created = youngLease(entry, node, ttlMs)
  if (created === undefined) return false
  stopWaitTimers(node)
  const timer = setTimeout(
    () => {
      node.emptyTimer = undefined
      if (entry.node !== node || !node.dataLeased || !entry.conn.alive) return
      // Marked at once: a try that starts before the write answers treats the node as holding no lease.
      node.dataLeased = false
      writeLease(entry, undefined).catch(() => undefined)
    },
    Math.max(0, created.sentAt + ttlMs * YOUNG_PART - performance.now()),
  )
  timer.unref()
  node.emptyTimer = timer
  return true
}

/**
 * Stops the timers of a waiting node: the one that would empty its lease, and the one that would wake its core to
 * judge the holder (`ZkWaiters.moveUp`). For a node granted, woken or dropped.
 */
export function stopWaitTimers(node: NodeState): void {
  if (node.is !== 'waiting') return
  clearTimeout(node.judgeTimer)
  node.judgeTimer = undefined
  if (node.emptyTimer === undefined) return
  clearTimeout(node.emptyTimer)
  node.emptyTimer = undefined
}
