/**
 * Handing the lock over on the deletion event alone, without listing the line again.
 *
 * Curator's waiter watches the node just ahead of its own and, when that node is deleted, lists the line again:
 * the node ahead need not have held the lock (it may have given up), so its deletion alone does not make the
 * waiter first. That listing is a round trip on every handoff. But a waiter whose listing showed exactly one node
 * ahead of its own is first the moment that node is deleted: ZooKeeper numbers a parent's sequential children
 * from a counter that only grows, so every node created after the listing sorts behind ours, and nothing that was
 * ahead of ours comes back. Such a waiter is granted on the event (`firstAfter`).
 *
 * To be in that position before its turn comes, a waiter of an exclusive kind also watches the node two ahead of
 * its own: when that one goes (usually the holder releasing, which makes the node just ahead the holder), the
 * backend lists the line again, while the new holder holds, and finds one node ahead (`moveUp`), without waking the
 * core: one release still wakes one waiter. The listing Curator makes after the handoff is made before it, off the
 * handoff's path.
 *
 * What the listing after the event would also have caught is our own node deleted while we waited (forceRelease
 * deletes waiters too). A waiter therefore watches its own node as well from its first wait, for its deletion, and
 * that event forgets the node (the next try takes a new place in line); `firstAfter` is set only once that watch is
 * in place. ZooKeeper delivers one session's events in the order of the changes, and forceRelease deletes the
 * waiters before the holders, so that event arrives before the one that would have granted on a deleted node. Not
 * across a reconnect: the events it brings (SetWatches) come in the order of the watched paths, so a deletion event
 * after one lists the line as before. A node deleted after the handoff, or by another tool in another order, is a
 * holder's lease lost, told by the same watch.
 *
 * One kind of child can join ahead of ours after all: one made by hand (or by another tool) with no sequence number,
 * which the default layout puts first in line (`orderOf`), or with a made-up one lower than ours. A lease granted on
 * the event is therefore checked against a listing once it has lived GUARD_AFTER_MS (`confirmFirst`, from the
 * backend's `watchLease`), when the holder's own-node watch would be set: a node ahead of ours makes the lease lost.
 * A shorter hold is not checked, as it is not guarded against forceRelease either: a listing sent with every grant
 * cost 0.3 ms of handoff gap and of client CPU per acquisition with 10 waiters over 4 processes.
 *
 * Not for semaphores: their line is the one whose permit counts agree (`agreeingLine`), which a deletion can change
 * ahead of us, and several hold at once.
 */
import type { LockKind } from '../../backend/types.js'
import { leaseLost, type OwnerEntry, type WaitingNode } from './zk-entry.js'
import { checkHolders, judgeHolders, readHolders } from './zk-holders.js'
import { listChildren } from './zk-node-ops.js'
import { EXCLUSIVE, type LockNode, lineOf, type Standing } from './zk-nodes.js'

/**
 * The node whose deletion alone makes ours first: the only node ahead of ours (`index` 1) when it is the one
 * watched; undefined otherwise.
 */
export function firstAfterOf(
  kind: LockKind,
  line: readonly LockNode[],
  index: number,
  standing: Standing,
): string | undefined {
  if (kind === 'semaphore' || index !== 1 || standing.watch.length !== 1) return undefined
  const ahead = line[0]
  return standing.watch[0] === ahead ? ahead?.name : undefined
}

/** Records the node whose deletion makes `node` first (or none), on the entry's connection as it is now. */
export function nextInLine(entry: OwnerEntry, node: WaitingNode, firstAfter: string | undefined): void {
  node.firstAfter = firstAfter
  node.firstOn = entry.conn.connects
}

/**
 * Whether the deletion of `name` makes `node` first: it is `firstAfter`, and no reconnect came in between (the events
 * a reconnect brings come in the order of the watched paths, so our own node's deletion could come second).
 */
export function firstOnDeletion(entry: OwnerEntry, node: WaitingNode, name: string): boolean {
  return name === node.firstAfter && node.firstOn === entry.conn.connects
}

/**
 * What a waiter at `index` watches besides `standing.watch`, for its deletion (in the same turn): its own node (see
 * the module comment; a watch already set is not sent again), and for an exclusive kind the node two ahead.
 */
export function alsoWatched(kind: LockKind, line: readonly LockNode[], index: number): LockNode[] {
  if (kind === 'semaphore') return []
  const own = line[index] as LockNode
  // An exclusive kind's waiter watches the node just ahead of its own (`standingOf`): the node two ahead is the next.
  const twoAhead = EXCLUSIVE.has(kind) && index >= 2 ? line[index - 2] : undefined
  return twoAhead === undefined ? [own] : [twoAhead, own]
}

/**
 * What `moveUp` found: the core must try now (`wake`), nothing to do (the waiter was woken or its node went meanwhile:
 * the core is on it), or the waiter is next in line and sleeps on, its core to be woken after `retryAfterMs` (when
 * the holder's lease could run out: the first waiter judges it), if set.
 */
export type MoveUp = 'wake' | 'none' | { readonly retryAfterMs: number | undefined }

/**
 * The node two ahead of `node` was deleted: lists the line and, when one node is left ahead of ours and it is the one
 * we watch, makes us next in line (`firstAfter`) and judges that holder's lease (read with the listing), as the core's
 * next try would, without waking it. A holder granted ahead of its lease write may show no lease yet: then no time is
 * set, and the waiter judges that holder at its core's next poll, as a waiter that the line moved up always did
 * before.
 */
export async function moveUp(entry: OwnerEntry, node: WaitingNode): Promise<MoveUp> {
  const listing = listChildren(entry.conn, entry.parent)
  // The node just ahead is most likely the holder now: its lease is read in the same round trip as the listing, not
  // one after it (a session's requests are answered in order, so the read sees the node no earlier than the listing
  // saw the line). The process then wakes once for both answers, during the hold, rather than twice.
  const expected = node.ahead
  const read = expected === undefined ? undefined : readHolders(entry, [{ name: expected }])
  read?.catch(() => undefined)
  const children = await listing
  if (entry.node !== node || node.woken) return 'none'
  const line = lineOf(children, entry.layout.parse)
  const ahead = line[0]
  if (line[1]?.name !== node.name || ahead === undefined || !entry.watching.has(ahead.name) || !node.ownWatched) {
    return 'wake'
  }
  nextInLine(entry, node, ahead.name)
  node.twoAhead = undefined
  node.ahead = undefined
  const holders =
    read !== undefined && ahead.name === expected
      ? await judgeHolders(entry, await read)
      : await checkHolders(entry, [ahead])
  if (entry.node !== node || node.woken) return 'none'
  return holders === 'changed' ? 'wake' : holders
}

/** Why a lease granted on the deletion event was lost: a listing after the grant showed it not first. */
export const NOT_FIRST =
  'a listing after its grant showed another node ahead of it (a child made by hand) or its own node gone'

/**
 * Checks a grant on the deletion event (made without listing) against `listing`, sent since: when the listing answers
 * and the entry still holds that grant, its node must be first in line; else its lease is lost.
 */
export function confirmFirst(entry: OwnerEntry, listing: Promise<string[]>): void {
  const held = entry.node
  if (held.is !== 'held') return
  listing.then(
    (children) => {
      if (entry.node === held && lineOf(children, entry.layout.parse)[0]?.name !== held.name) {
        leaseLost(entry, NOT_FIRST)
      }
    },
    // A listing lost with the connection says nothing about the line; the session's liveness check tells the lease.
    () => undefined,
  )
}
