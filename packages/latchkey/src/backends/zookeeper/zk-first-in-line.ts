/**
 * A woken waiter that knows it is first in line, granted with no listing. Curator's waiter lists the line again
 * after its predecessor's deletion; latchkey's skips that round trip when its last listing showed exactly one node
 * ahead of its own, that node is the one just deleted, and its own node is known to exist at that deletion.
 *
 * Why this is safe (exclusive kinds, where the first node of the line holds):
 *
 * 1. At our last listing our node N was in line and exactly one node P was ahead of it, a sequential node.
 * 2. Before watching P we set a deletion watch on N itself (sent first, so answered first). ZooKeeper answers one
 *    session's requests in order and delivers its watch events in zxid order, after the replies sent before them.
 *    If N was already gone, that watch answers "no node" and we fall back to listing; if N is deleted later, its
 *    event reaches us before any event of a later change, P's deletion included.
 * 3. So when P's deletion reaches us with no deletion of N before it, N existed when P was deleted, and so did
 *    the lock node (a node with a child cannot be deleted). The lock node's sequence counter only grows while it
 *    exists, so every node created after our listing has a higher sequence than N and stands behind it. The one
 *    node ahead was P. At P's deletion N is first, which for a mutex, fair or write node means it holds.
 *
 * What the listing would have seen and this does not: a child with no sequence number created after our listing.
 * latchkey's layout puts such a child (another client's fixed-name lock node) first in line; it is created while
 * P holds, by a client that ignores the line and so already overlaps P. Waiters that list after its creation still
 * defer to it; the one waiter granted this way does not. A sequential node of another client (kazoo, Curator) is
 * covered by (3) like ours.
 *
 * The grant itself is the young lease of the create (zk-young-lease.ts): a waiter whose lease is old writes a new
 * one and lists, as before. The deletion watch on N stays armed into the holding: it is the holder's guard
 * (`guardLease` finds it set and sends nothing).
 */
import type { LockKind } from '../../backend/types.js'
import type { NodeState, OwnerEntry } from './zk-entry.js'
import type { LockNode } from './zk-nodes.js'
import { type WatchHub, watchNodes } from './zk-watch.js'

type Waiting = Extract<NodeState, { is: 'waiting' }>

/** Kinds that hold as the first node of the line. */
const EXCLUSIVE = new Set<LockKind>(['mutex', 'fair', 'write'])

/** The name of the only node ahead of ours (at `index` in `line`) when its deletion alone makes us first; else undefined. */
export function soleAheadOf(kind: LockKind, line: readonly LockNode[], index: number): string | undefined {
  if (!EXCLUSIVE.has(kind) || index !== 1) return undefined
  const ahead = line[0] as LockNode
  // A child with no sequence number stands first by name, not by the counter argument above.
  return ahead.order === '' ? undefined : ahead.name
}

/**
 * Arms the deletion watch on our own node before the watch on the one node ahead (call it first: requests go out
 * in call order), and marks the node so that the deletion of that node ahead grants it (see the module comment).
 * Resolves true when our node is already gone.
 */
export function guardFirstInLine(entry: OwnerEntry, node: Waiting, soleAhead: string, hub: WatchHub): Promise<boolean> {
  node.soleAhead = soleAhead
  node.first = false
  const own = { name: node.name, owner: entry.owner, kind: entry.kind, order: '' }
  const guard = watchNodes(entry, [own], hub, entry.parent, true)
  node.guard = guard
  guard.then(
    (gone) => {
      if (gone) clearFirstInLine(node)
    },
    () => clearFirstInLine(node),
  )
  return guard
}

/** Whether a woken waiter may take the grant with no listing: the node ahead went, our node still stood then. */
export async function knownFirst(node: Waiting): Promise<boolean> {
  const { first, guard } = node
  if (first !== true || guard === undefined) return false
  // Answered before the event that set `first` (see the module comment); awaited only to read its answer.
  const gone = await guard.catch(() => true)
  return !gone && node.first === true
}

/** Forgets what the last listing said (a new round decides again, or our node went). */
export function clearFirstInLine(node: Waiting): void {
  node.soleAhead = undefined
  node.first = false
}
