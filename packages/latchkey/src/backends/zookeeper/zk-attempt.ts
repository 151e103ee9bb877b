/**
 * One `tryAcquire` on an owner's node: create it (or list its lock), decide by the grant rules, grant, or check
 * the holders' leases, keep the place in line and watch the node ahead. Never waits for a release.
 */
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import { readLong, type ZkStat } from './zk-client.js'
import type { ZkConnection } from './zk-connection.js'
import { type CreatedLease, leaseLost, NO_NODE, type OwnerEntry } from './zk-entry.js'
import { alsoWatched, firstAfterOf, nextInLine } from './zk-first-in-line.js'
import { checkHolders } from './zk-holders.js'
import { createNode, listChildren, statOf, writeLease } from './zk-node-ops.js'
import { agreeingLine, lineOf, standingOf } from './zk-nodes.js'
import { DELETED, type WatchHub, watchNodes } from './zk-watch.js'
import { keepYoungLease, stopWaitTimers, youngLease } from './zk-young-lease.js'

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
    /** The stat of a node created in this round by CREATE2 (undefined after a plain CREATE). */
    let createdStat: ZkStat | undefined
    let leased: Promise<ZkStat | undefined> | undefined
    /** Set when the lease write follows the listing: a lower bound of that write's server time. */
    let leaseFrom: number | undefined
    /** Set when a woken waiter still holds the young lease of its create: granted on it, with no write. */
    let fromCreate: CreatedLease | undefined
    let children: string[]
    const node = entry.node
    if (node.is === 'none' || node.is === 'unsure') {
      const created = await createNode(entry, request.ttlMs, (p) => deps.ensureParent(entry.conn, p))
      ;({ children, fresh, stat: createdStat } = created)
    } else {
      // Woken by our watch, it is most likely our turn: keep the young lease of our create, or else start the
      // lease in the same round trip as the listing (one session's requests are answered in order); if it was not
      // our turn, it is emptied below. Not for a semaphore waiter woken by its predecessor's write: it only moved
      // up in line.
      const woken = node.is === 'waiting' && node.woken && !node.wakeOnChange
      // The listing the watch sent as it woke us (`ZkWaiters.listAhead`): used below where we would send the same.
      const listedAhead = node.is === 'waiting' ? node.listing : undefined
      // Woken by the deletion of the only node ahead: first in line (zk-first-in-line.ts).
      const first = woken && node.is === 'waiting' && node.first === true
      if (node.is === 'waiting') {
        node.listing = undefined
        node.woken = false
        node.first = false
        node.firstAfter = undefined
        node.twoAhead = undefined
        node.ahead = undefined
        // This try judges the holders itself and tells the core when to try again.
        clearTimeout(node.judgeTimer)
        node.judgeTimer = undefined
        if (woken) fromCreate = youngLease(entry, node, request.ttlMs)
        // Woken, its lease is kept or written now: it must not be emptied under the grant (re-armed below if the
        // listing says wait).
        if (woken) stopWaitTimers(node)
      }
      if (
        first &&
        node.is === 'waiting' &&
        node.czxid !== undefined &&
        (fromCreate !== undefined || !node.dataLeased)
      ) {
        // Granted on the event: on the young lease of our create, or ahead of the lease write. A hold that lasts is
        // checked against a listing later (`unconfirmed`, zk-first-in-line.ts).
        let granted: AcquireResult
        if (fromCreate !== undefined) granted = grantOnCreate(entry, request, node.czxid, fromCreate)
        else {
          const leaseFrom = entry.conn.serverNow()
          const leased = writeLease(entry, request.ttlMs)
          leased.catch(() => undefined)
          granted = grantAhead(entry, request, node.czxid, leaseFrom, leased)
        }
        if (entry.node.is === 'held') entry.node.unconfirmed = true
        return granted
      }
      if (fromCreate !== undefined) {
        // Still holding the young lease of its create (zk-young-lease.ts): the listing alone decides.
        children = await (listedAhead ?? listChildren(entry.conn, entry.parent))
      } else if (woken && node.is === 'waiting' && node.czxid !== undefined && !node.dataLeased) {
        // The token is known from the create: the listing goes first and decides alone, the lease write follows
        // it on the session (a read queued behind a write would wait for the write's commit).
        leaseFrom = entry.conn.serverNow()
        const listed = listChildren(entry.conn, entry.parent)
        leased = writeLease(entry, request.ttlMs)
        leased.catch(() => undefined)
        children = await listed
      } else {
        if (woken) leased = writeLease(entry, request.ttlMs)
        leased?.catch(() => undefined)
        children = await listChildren(entry.conn, entry.parent)
      }
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
      if (fromCreate !== undefined && ours.is === 'waiting' && ours.czxid !== undefined) {
        return grantOnCreate(entry, request, ours.czxid, fromCreate)
      }
      if (leaseFrom !== undefined && leased !== undefined && ours.is === 'waiting' && ours.czxid !== undefined) {
        return grantAhead(entry, request, ours.czxid, leaseFrom, leased)
      }
      const stat = fresh ? (createdStat ?? statOf(entry)) : (leased ?? writeLease(entry, request.ttlMs))
      return grant(entry, request, await stat)
    }
    await leased
    const firstAfter = firstAfterOf(request.kind, line, index, standing)
    // With our own node already watched, a deletion event of the node ahead from here on comes after our own node's
    // (zk-first-in-line.ts): next in line at once, even if that node goes while we check the holders.
    if (ours.is === 'waiting' && ours.ownWatched) nextInLine(entry, ours, firstAfter)
    const holders = await checkHolders(entry, standing.blockers)
    if (holders === 'changed') continue
    retryAfterMs = holders.retryAfterMs
    if (!keeps(entry, request)) {
      await deps.drop(entry)
      return { acquired: false, retryAfterMs }
    }
    // A waiting node holds no lease, or a young one (zk-young-lease.ts): nobody may judge it expired while it waits.
    if (ours.is === 'waiting' && ours.dataLeased && !keepYoungLease(entry, ours, request.ttlMs)) {
      if ((await writeLease(entry, undefined)) === undefined) continue
    }
    const also = alsoWatched(request.kind, line, index)
    if (ours.is === 'waiting') ours.wakeOnChange = standing.wakeOnChange
    // Only a semaphore waiter behind a waiting predecessor needs that node's data changes (its permit write). The
    // other watches go out in the same turn (zk-first-in-line.ts).
    const gone = await Promise.all([
      watchNodes(entry, standing.watch, deps.hub, entry.parent, !standing.wakeOnChange),
      ...also.map((n) => watchNodes(entry, [n], deps.hub, entry.parent, true)),
    ])
    if (entry.node !== ours) continue // our own node's watch fired meanwhile (ZkWaiters)
    const ownAt = also.findIndex((n) => n.name === ours.name)
    if (ownAt >= 0 && gone[ownAt + 1]) {
      entry.node = NO_NODE // our node was deleted while we waited: take a new place in line
      continue
    }
    if (ours.is === 'waiting' && ownAt >= 0) ours.ownWatched = true
    if (gone.some(Boolean)) continue
    // Only now that our own node is watched: a deletion event from here on comes after its own (events and replies
    // arrive in order), and one that came before found `firstAfter` unset and made the next try list the line.
    if (ours.is === 'waiting') {
      nextInLine(entry, ours, firstAfter)
      ours.twoAhead = also.length === 2 ? also[0]?.name : undefined
      ours.ahead = also.length === 2 ? standing.watch[0]?.name : undefined
    }
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
 * Grants a woken waiter on the young lease of its create (zk-young-lease.ts): the lease runs from the create's
 * mtime by the server's clock, and from the create's send time (no later) by ours.
 */
function grantOnCreate(
  entry: OwnerEntry,
  request: AcquireRequest,
  czxid: Buffer,
  created: CreatedLease,
): AcquireResult {
  const { node } = entry
  if (node.is !== 'waiting') return { acquired: false, retryAfterMs: 1 }
  const lease = { mtime: created.mtime, ttlMs: request.ttlMs }
  entry.node = { is: 'held', name: node.name, lease, onLeaseLost: undefined }
  return { acquired: true, token: readLong(czxid), grantedAt: created.sentAt }
}

/**
 * Grants a woken waiter on its listing, before its lease write answers. Until that write lands the node holds no
 * lease, and a node without one is never judged expired, so nobody can take the lock meanwhile; the holder counts
 * its lease from `leaseFrom` (server time, estimated low: the write's mtime is later) until the write's stat
 * replaces it. A node gone by then is a lease lost.
 */
function grantAhead(
  entry: OwnerEntry,
  request: AcquireRequest,
  czxid: Buffer,
  leaseFrom: number,
  leased: Promise<ZkStat | undefined>,
): AcquireResult {
  const { node } = entry
  if (node.is !== 'waiting') return { acquired: false, retryAfterMs: 1 }
  const lease = { mtime: leaseFrom, ttlMs: request.ttlMs }
  const held = { is: 'held' as const, name: node.name, lease, onLeaseLost: undefined }
  entry.node = held
  leased.then(
    (stat) => {
      if (entry.node !== held) return
      if (stat === undefined) leaseLost(entry, DELETED)
      else if (held.lease === lease) held.lease = { mtime: Number(readLong(stat.mtime)), ttlMs: request.ttlMs }
    },
    () => undefined,
  )
  return { acquired: true, token: readLong(czxid) }
}

/**
 * Whether a waiter keeps its node (its place in line) between tries: fair and write locks always (the core
 * queues them); every other kind while a subscription is bound, because the core then keeps calling and
 * closes that subscription when it gives up (`onSubClose` deletes the node). Plain tries never keep it.
 */
export function keeps(entry: OwnerEntry, request: AcquireRequest): boolean {
  return request.queue || entry.sub !== undefined
}
