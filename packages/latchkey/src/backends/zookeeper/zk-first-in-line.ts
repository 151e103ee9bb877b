/**
 * A woken waiter that knows it is first in line, granted with no listing. Curator's waiter lists the line again
 * after its predecessor's deletion; latchkey's skips that round trip when it knows the deleted node was the last one
 * ahead of its own: its last listing showed that node alone ahead of it, or that node was a holder of this backend
 * (this process, this session), released by it. And its own node must be known to exist at that deletion.
 *
 * Why this is safe (exclusive kinds, where the first node of the line holds):
 *
 * 1. At our last listing our node N was in line and P, a sequential node, stood right ahead of it.
 * 2. Before watching P we set a deletion watch on N itself (sent first, so answered first). ZooKeeper answers one
 *    session's requests in order and delivers its watch events in zxid order, after the replies sent before them.
 *    If N was already gone, that watch answers "no node" and we fall back to listing; if N is deleted later, its
 *    event reaches us before any event of a later change, P's deletion included.
 * 3. So when P's deletion reaches us with no deletion of N before it, N existed when P was deleted, and so did
 *    the lock node (a node with a child cannot be deleted). The lock node's sequence counter only grows while it
 *    exists, so every node created after our listing has a higher sequence than N and stands behind it, and every
 *    node created after P has a higher sequence than P.
 * 4. Nothing stood ahead of P when it was deleted: either nothing stood ahead of it at our listing (P alone ahead
 *    of N), or P was an exclusive holder of this backend, which was first when granted, and our own release deleted
 *    it (the event of a delete reaches the deleting session before the delete's reply). By (3) no node joined
 *    ahead of P later, nor between P and N. So at P's deletion N is first, which for a mutex, fair or write node
 *    means it holds.
 *
 * What the listing would have seen and this does not: a child with no sequence number created after our listing.
 * latchkey's layout puts such a child (another client's fixed-name lock node) first in line; it is created while
 * P or a node ahead of it holds, by a client that ignores the line and so already overlaps that holder. Waiters that
 * list after its creation still defer to it; the one waiter granted this way does not. A sequential node of another
 * client (kazoo, Curator) is covered by (3) like ours. A third party deleting N and P in one multi (one zxid) is
 * told to N's holder by N's deletion event, which follows at once, as any deletion behind a holder's back.
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

/**
 * The node right ahead of ours (at `index` in `line`) when its deletion can make us first: it stands alone ahead of
 * us (`alone`), or it is a holder-to-be of this backend (`ours`: its release may tell us); else undefined.
 */
export function aheadOf(
  kind: LockKind,
  line: readonly LockNode[],
  index: number,
  ours: (node: LockNode) => boolean,
): { readonly name: string; readonly alone: boolean } | undefined {
  if (!EXCLUSIVE.has(kind) || index < 1) return undefined
  const ahead = line[index - 1] as LockNode
  // A child with no sequence number stands first by name, not by the counter argument above.
  if (ahead.order === '') return undefined
  if (index === 1) return { name: ahead.name, alone: true }
  return EXCLUSIVE.has(ahead.kind) && ahead.foreign !== true && ours(ahead)
    ? { name: ahead.name, alone: false }
    : undefined
}

/** Whether the deletion of `node`'s watched node ahead, at `path`, makes it first (see the module comment). */
export function firstAfterDeletion(
  node: Waiting,
  name: string,
  releasedHere: (path: string) => boolean,
  path: string,
): boolean {
  return node.ahead !== undefined && name === node.ahead.name && (node.ahead.alone || releasedHere(path))
}

/**
 * Arms the deletion watch on our own node before the watch on the node ahead (call it first: requests go out
 * in call order), and marks the node so that the deletion of that node ahead grants it (see the module comment).
 * Resolves true when our node is already gone.
 */
export function guardFirstInLine(
  entry: OwnerEntry,
  node: Waiting,
  ahead: NonNullable<Waiting['ahead']>,
  hub: WatchHub,
): Promise<boolean> {
  node.ahead = ahead
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

/** Whether a woken waiter may take the grant with no listing: the last node ahead went, our node still stood then. */
export async function knownFirst(node: Waiting): Promise<boolean> {
  const { first, guard } = node
  if (first !== true || guard === undefined) return false
  // Answered before the event that set `first` (see the module comment); awaited only to read its answer.
  const gone = await guard.catch(() => true)
  return !gone && node.first === true
}

/** Forgets what the last listing said (a new round decides again, or our node went). */
export function clearFirstInLine(node: Waiting): void {
  node.ahead = undefined
  node.first = false
}
