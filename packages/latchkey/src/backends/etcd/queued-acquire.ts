/**
 * A waiting fair/write request (`request.queue`) keeps its key between tries as its place in line: the lowest
 * create revision goes first, each waiter blocks on the key just before it, and once nothing is before it, it
 * swaps its short queue lease for a lease of its own TTL (create revision, hence token, unchanged).
 */
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import { monotonicNow } from '../../core/clock.js'
import { type AcquireDeps, acquireNow, MISS, putOp } from './acquire.js'
import type { EtcdKeyValue } from './etcd-client.js'
import { prefixRange } from './keys.js'
import { ttlSeconds } from './leases.js'
import { createdAt, type KeyedOwner } from './owners.js'

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
