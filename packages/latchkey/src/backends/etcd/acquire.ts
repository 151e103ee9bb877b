/**
 * tryAcquire on etcd, Go `concurrency.Mutex` style, fitted to a try-based contract:
 *
 * - A plain try (mutex, read, semaphore, and fair/write when not waiting) writes a key only if it wins: one txn
 *   `If <no blocking key> Then Put(myKey, lease)`, where "no blocking key" is a range compare (`version == 0`
 *   over each blocking kind's folder; semaphores are in `semaphore.ts`).
 *   A miss leaves nothing behind, so a crowd of retrying waiters never churns the keyspace.
 * - A waiting fair/write request (`request.queue`) keeps its key between tries as its place in line: the
 *   lowest create revision goes first, each waiter blocks on the key just before it, and once nothing is
 *   before it, it swaps its short queue lease for a lease of its own TTL (create revision, hence token, unchanged).
 *
 * The token is always the holder key's create revision.
 */
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import { monotonicNow } from '../../core/clock.js'
import { type EtcdClient, type EtcdCompare, type EtcdKeyValue, type EtcdRequestOp, isLeaseGone } from './etcd-client.js'
import { type EtcdKeyLayout, prefixRange } from './keys.js'
import { type Leases, type OwnerLease, ttlSeconds } from './leases.js'
import { createdAt, type KeyedOwner, type Owners } from './owners.js'
import type { WatchHub } from './watch-hub.js'

const MISS: AcquireResult = { acquired: false }

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

/** A waiting fair/write try: keeps (or takes) a place in line and is granted when nothing is before it. */
export async function acquireQueued(d: AcquireDeps, req: AcquireRequest, until: number): Promise<AcquireResult> {
  const state = d.owners.get(req.owner, req.key, req.kind)
  if (state?.role === 'waiter' && (await keepPlace(d, req, state))) {
    const line = await d.client.kv.range(lineRange(d, req))
    const result = await decide(d, req, state, line.kvs, until)
    if (result !== undefined) return result
  } else {
    const now = await acquireNow(d, req, until)
    if (now.acquired) return now
  }
  // No place yet, or it was lost (expired queue lease, forceRelease): join at the back of the line.
  const joined = await joinLine(d, req)
  return (await decide(d, req, joined.state, joined.line, until)) ?? MISS
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

/** Refreshes a waiter's queue lease when a third of it has passed; false when the place is gone. */
async function keepPlace(d: AcquireDeps, req: AcquireRequest, state: KeyedOwner): Promise<boolean> {
  if (d.leases.remainingMs(state.lease) > (state.lease.ttlS * 1_000 * 2) / 3) return true
  if (await d.leases.refresh(state.lease)) return true
  d.owners.delete(req.owner)
  return false
}

/** Puts this owner's key on a queue lease and reads the line in the same txn. */
async function joinLine(d: AcquireDeps, req: AcquireRequest): Promise<{ state: KeyedOwner; line: EtcdKeyValue[] }> {
  const previous = d.owners.get(req.owner, req.key, req.kind)
  if (previous?.role === 'probe') d.leases.putBack(previous.lease) // it carries no key
  const lease = await d.leases.take(ttlSeconds(req.queueTtlMs), monotonicNow() + req.queueTtlMs)
  const key = d.layout.ownerKey(req, lease.id, req.owner)
  // Never over another's key: in Go's layout a key names a lease, and a put would take over a key of the same name.
  const res = await d.client.kv.txn({
    compare: [createdAt(key, 0n)],
    success: [putOp(key, d.layout.ownerValue(req.owner), lease.id), { request_range: lineRange(d, req) }],
  })
  if (!res.succeeded) {
    d.leases.revokeLater(lease)
    throw new Error(`etcd key ${key} already exists: its lease was reused while the key lived`)
  }
  const state: KeyedOwner = {
    role: 'waiter',
    lockKey: req.key,
    kind: req.kind,
    lease,
    key,
    revision: BigInt(res.header.revision),
  }
  d.owners.set(req.owner, state)
  return { state, line: res.responses[1]?.response_range?.kvs ?? [] }
}

/**
 * Grants when no family key is older than ours, else records the key just before ours for the watch.
 * Undefined when our own key is gone from the line (the caller joins again).
 */
async function decide(
  d: AcquireDeps,
  req: AcquireRequest,
  state: KeyedOwner,
  line: readonly EtcdKeyValue[],
  until: number,
): Promise<AcquireResult | undefined> {
  const { mine, before } = placeIn(d, req, state, line)
  if (!mine) {
    d.owners.delete(req.owner)
    return undefined
  }
  if (before !== undefined) {
    d.hub.setPredecessor(req, req.owner, before.key.toString())
    return MISS
  }
  d.hub.setPredecessor(req, req.owner, undefined)
  return promote(d, req, state, until)
}

/**
 * Where `state`'s key stands in `line` (the keys of its lock name): whether it is still there, and the family key
 * just older than it (none: it is first).
 */
export function placeIn(
  d: AcquireDeps,
  req: AcquireRequest,
  state: KeyedOwner,
  line: readonly EtcdKeyValue[],
): { mine: boolean; before: EtcdKeyValue | undefined } {
  let mine = false
  let before: EtcdKeyValue | undefined
  for (const kv of line) {
    const parsed = d.layout.parse(kv.key, req.key)
    if (parsed === undefined || parsed.kind === 'semaphore') continue
    const revision = BigInt(kv.create_revision)
    if (revision === state.revision) mine = kv.key.toString() === state.key
    else if (revision < state.revision && (before === undefined || revision > BigInt(before.create_revision)))
      before = kv
  }
  return { mine, before }
}

/** First in line: move the key onto a lease of the holder's TTL. The create revision (token) stays. */
async function promote(d: AcquireDeps, req: AcquireRequest, state: KeyedOwner, until: number): Promise<AcquireResult> {
  const lease = await d.leases.take(ttlSeconds(req.ttlMs), until)
  const put = putOp(state.key, d.layout.ownerValue(req.owner), lease.id)
  const res = await d.client.kv.txn({ compare: [createdAt(state.key, state.revision)], success: [put] })
  if (!res.succeeded) {
    d.leases.putBack(lease)
    d.owners.delete(req.owner)
    return MISS
  }
  // The key moved off the queue lease. In Go's layout the key still names that lease, so it is never reused.
  if (d.layout.keyNamesLease) d.leases.revokeLater(state.lease)
  else d.leases.putBack(state.lease)
  d.owners.set(req.owner, { ...state, role: 'holder', lease })
  return { acquired: true, token: state.revision }
}

/** The range of every key of `req`'s lock name (all kinds; semaphore keys are skipped when read). */
export function lineRange(d: AcquireDeps, req: AcquireRequest): { key: Buffer; range_end: Buffer; keys_only: true } {
  const range = prefixRange(d.layout.lockPrefix(req.key))
  return { key: range.start, range_end: range.end, keys_only: true }
}
