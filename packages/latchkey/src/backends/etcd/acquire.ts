/**
 * tryAcquire on etcd, Go `concurrency.Mutex` style, fitted to a try-based contract:
 *
 * - A plain try (mutex, read, semaphore, and fair/write when not waiting) writes a key only if it wins: one txn
 *   `If <no blocking key> Then Put(myKey, lease)`, where "no blocking key" is a range compare (`version == 0`
 *   over each blocking kind's folder; semaphores are in `semaphore.ts`).
 *   A miss leaves nothing behind, so a crowd of retrying waiters never churns the keyspace.
 * - A waiting fair/write request (`request.queue`) keeps its key between tries as its place in line
 *   (`queued-acquire.ts`).
 *
 * The token is always the holder key's create revision.
 */
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import { type EtcdClient, type EtcdCompare, type EtcdRequestOp, isLeaseGone } from './etcd-client.js'
import type { EtcdKeyLayout } from './keys.js'
import { type Leases, type OwnerLease, ttlSeconds } from './leases.js'
import { createdAt, type Owners } from './owners.js'
import type { WatchHub } from './watch-hub.js'

/** A try that did not get the lock. */
export const MISS: AcquireResult = { acquired: false }

/** Everything the acquire paths share with the backend. */
export interface AcquireDeps {
  readonly client: EtcdClient
  readonly layout: EtcdKeyLayout
  readonly leases: Leases
  readonly owners: Owners
  readonly hub: WatchHub
}

/**
 * A plain try: grants only if nothing blocks `req` right now; writes nothing otherwise. A retrying owner puts at
 * once when the watch saw a key of the name go since its last miss (the lock is likely free), else looks first
 * (a read). The keepalive a reused lease needs travels beside the put only when the try is likely to win alone
 * (an uncontended first try, or a retry whose look found the lock free); otherwise it follows a win.
 */
export async function acquireNow(d: AcquireDeps, req: AcquireRequest, until: number): Promise<AcquireResult> {
  const compare = admission(d, req)
  const probe = d.owners.get(req.owner, req.key, req.kind)
  const seenAtSend = d.hub.deletesSeen(req)
  let likely: boolean
  if (probe?.role === 'probe') {
    const released = seenAtSend !== undefined && probe.deletesSeen !== undefined && seenAtSend > probe.deletesSeen
    // Not woken by a release (a timed retry, a reconnected watch): look first. A txn without writes is a read,
    // while a txn that may put is a raft proposal with an fsync even when its compare fails.
    if (!released && !(await d.client.kv.txn({ compare })).succeeded) return missed(d, req, seenAtSend)
    // Woken by a release, every process with waiters sends one try and one wins: a keepalive beside each put
    // would be wasted by all but one, so only the winner sends it, after its put (measured: fewer calls per
    // handoff made the handoff no slower on a busy 2-core machine, and cost less CPU).
    likely = !released
  } else likely = !d.hub.busy(req)
  for (let round = 0; round < 2; round++) {
    const { lease, refreshed } = await leaseFor(d, req, until, likely)
    const key = d.layout.ownerKey(req, lease.id, req.owner)
    let res: { succeeded: boolean; header: { revision: string } }
    try {
      res = await d.client.kv.txn({ compare, success: [putOp(key, d.layout.ownerValue(req.owner), lease.id)] })
    } catch (error) {
      if (!isLeaseGone(error)) throw error
      d.owners.delete(req.owner) // the lease expired under us: a new one next round
      continue
    }
    if (!res.succeeded) return missed(d, req, seenAtSend)
    return won(d, req, { lease, key, revision: BigInt(res.header.revision), until, refreshed })
  }
  return MISS
}

/** Records a miss: the name's delete count when the try went out (a later delete means a release since). */
function missed(d: AcquireDeps, req: AcquireRequest, seenAtSend: number | undefined): AcquireResult {
  const state = d.owners.get(req.owner, req.key, req.kind)
  if (state?.role === 'probe') state.deletesSeen = seenAtSend
  d.hub.missed(req)
  return MISS
}

/** What {@link won} is told: the key put, its create revision, and the keepalive sent beside the put, if any. */
export interface Won {
  readonly lease: OwnerLease
  readonly key: string
  readonly revision: bigint
  readonly until: number
  readonly refreshed?: Promise<boolean> | undefined
}

/**
 * Our key is in. Before granting, make sure its lease outlives the caller's deadline (`sentAt + ttlMs`, and
 * sentAt preceded this keepalive, whether it went beside the put or goes now); if the lease ran out meanwhile,
 * etcd deleted the key with it: a miss. A lease refreshed (or granted) a moment ago needs no keepalive: the grant
 * is timed from that refresh instead (`Leases.freshGrantAt`; the put succeeded, so etcd still had the lease).
 */
export async function won(
  d: AcquireDeps,
  req: AcquireRequest,
  { lease, key, revision, until, refreshed }: Won,
): Promise<AcquireResult> {
  const grantedAt =
    refreshed === undefined && !d.leases.outlives(lease, until) ? d.leases.freshGrantAt(lease, req.ttlMs) : undefined
  if (refreshed !== undefined || (grantedAt === undefined && !d.leases.outlives(lease, until))) {
    let alive: boolean
    try {
      alive = await (refreshed ?? d.leases.refresh(lease))
      // A keepalive sent after the caller's start always suffices; should a clock say otherwise, one more.
      if (alive && !d.leases.outlives(lease, until)) alive = await d.leases.refresh(lease)
    } catch (error) {
      // Unconfirmed: take the key back (best effort; otherwise it ends with its lease) and report the failure.
      await d.client.kv.txn({ compare: [createdAt(key, revision)], success: [deleteOp(key)] }).catch(() => {})
      d.owners.delete(req.owner)
      throw error
    }
    if (!alive) {
      d.owners.delete(req.owner)
      return MISS
    }
  }
  d.owners.set(req.owner, { role: 'holder', lockKey: req.key, kind: req.kind, lease, key, revision })
  return { acquired: true, token: revision, grantedAt }
}

/** Admission compares per layout, by kind and lock key: they depend on nothing else, and every try needs them. */
const ADMISSIONS = new WeakMap<EtcdKeyLayout, Map<string, EtcdCompare[]>>()
/** Names remembered per layout; the memo starts over past this (a process touching many names pays the build). */
const MAX_ADMISSIONS = 1_000

/** The compare that admits a mutex/fair/read/write try: no key in any folder of a blocking kind (never mutated). */
export function admission(d: AcquireDeps, req: AcquireRequest): EtcdCompare[] {
  let memo = ADMISSIONS.get(d.layout)
  if (memo === undefined) {
    memo = new Map()
    ADMISSIONS.set(d.layout, memo)
  }
  const id = `${req.kind}\u0000${req.key}`
  let compare = memo.get(id)
  if (compare === undefined) {
    compare = d.layout
      .blockingRanges(req)
      .map((r): EtcdCompare => ({ key: r.start, range_end: r.end, target: 'Version', result: 'Equal', version: '0' }))
    if (memo.size >= MAX_ADMISSIONS) memo.clear()
    memo.set(id, compare)
  }
  return compare
}

function deleteOp(key: string): EtcdRequestOp {
  return { request_delete_range: { key: Buffer.from(key) } }
}

/** Puts `key` with `value` (the layout's value for the owner) on `leaseId`. */
export function putOp(key: string, value: string, leaseId: string): EtcdRequestOp {
  return { request_put: { key: Buffer.from(key), value: Buffer.from(value), lease: leaseId } }
}

/**
 * The lease of an owner's earlier try when its TTL fits, else a spare or new one. When the try is `likely` to
 * win, the keepalive the lease needs to outlive `until` is sent now, to travel beside the caller's txn (see
 * {@link won}); otherwise {@link won} sends it after a win, and a miss costs none.
 */
export async function leaseFor(
  d: AcquireDeps,
  req: AcquireRequest,
  until: number,
  likely = true,
): Promise<{ lease: OwnerLease; refreshed?: Promise<boolean> }> {
  const probe = d.owners.get(req.owner, req.key, req.kind)
  let taken: { lease: OwnerLease; refreshed?: Promise<boolean> }
  if (probe?.role === 'probe' && probe.lease.ttlS * 1_000 >= req.ttlMs) taken = { lease: probe.lease }
  else {
    taken = await d.leases.takeSoon(ttlSeconds(req.ttlMs), until, likely, req.ttlMs)
    d.owners.set(req.owner, { role: 'probe', lockKey: req.key, kind: req.kind, lease: taken.lease })
  }
  const stale = !d.leases.outlives(taken.lease, until) && d.leases.freshGrantAt(taken.lease, req.ttlMs) === undefined
  if (likely && taken.refreshed === undefined && stale) {
    return { lease: taken.lease, refreshed: d.leases.refreshSoon(taken.lease) }
  }
  return taken
}
