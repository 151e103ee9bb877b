/**
 * The release side of the etcd mutex line (mutex-line.ts): a local holder's release that also puts the head of this
 * process's waiters in line, in one txn, and that txn built ahead, during the hold.
 */
import type { AcquireRequest } from '../../backend/types.js'
import { type AcquireDeps, leaseFor, putOp } from './acquire.js'
import type { EtcdTxnRequest, EtcdTxnResponse } from './etcd-client.js'
import type { OwnerLease } from './leases.js'
import { behind } from './mutex-line.js'
import { createdAt, type KeyedOwner } from './owners.js'
import { lineRange } from './queued-acquire.js'
import type { PendingJoin } from './release-joins.js'

/**
 * Releases `holder` (a mutex of this process) and puts the key of `join`, the head of this process's waiters of the
 * name, in etcd's line in the same txn: `If Create(holder) == token Then Delete(holder), Join Else Join`, where
 * Join is the put-and-read of `joinOrWin`'s line branch (mutex-line.ts). The head then learns its place from the answer
 * and is woken only when its turn can have come (or when the txn failed: it joins by itself). Its key is created
 * after the holder's delete, at the txn's revision, so it may well be first: a handoff inside the process then
 * waits for no watch event. A put is never over another's key: the holder's key is deleted in this txn, and in
 * Go's layout, where a key names its lease, the head never takes the holder's lease (it would name the same key).
 * Resolves whether the holder's key was still there, as a plain release does.
 */
export async function releaseAndJoin(d: AcquireDeps, holder: KeyedOwner, join: PendingJoin): Promise<boolean> {
  const { req, until, prepared } = join
  const own = holder.lease
  const reuse = reusable(d, own, req)
  let lease: OwnerLease | undefined
  let res: EtcdTxnResponse
  try {
    lease = reuse ? own : (await leaseFor(d, req, until, false)).lease
    let key: string
    if (reuse && prepared?.holder === holder) {
      key = prepared.key
      res = await prepared.send()
    } else {
      const built = releaseTxn(d, holder, req, lease)
      key = built.key
      res = await d.client.kv.txn(built.txn)
    }
    const joined = res.responses[res.succeeded ? 1 : 0]?.response_txn
    d.hub.joinSent(req, req.owner)
    if (joined?.succeeded === true && !d.hub.inLine(req, req.owner)) {
      // It gave up while its key was on its way: the key goes with its lease (no place is left behind).
      d.leases.revokeLater(lease)
      if (lease !== own) d.leases.putBack(own)
      return res.succeeded
    }
    if (joined?.succeeded === true) {
      const revision = BigInt(res.header.revision)
      const state: KeyedOwner = { role: 'waiter', lockKey: req.key, kind: req.kind, lease, key, revision }
      d.owners.set(req.owner, state)
      if (d.leases.remainingMs(lease) < (lease.ttlS * 1_000 * 2) / 3) void d.leases.refreshSoon(lease)
      behind(d, req, state, joined.responses[1]?.response_range?.kvs ?? [], revision)
    } else {
      // Its key name was taken (a lease reused while its key lived): it starts over by itself.
      d.owners.delete(req.owner)
      d.leases.revokeLater(lease)
    }
  } catch (error) {
    // Unknown whether the head's key went in: its lease goes (with any key on it; the holder's own lease with the
    // holder's key, which is the release asked for), and the head joins by itself.
    d.hub.joinSent(req, req.owner)
    d.owners.delete(req.owner)
    if (lease !== undefined) d.leases.revokeLater(lease)
    d.hub.wakeOwner(req, req.owner)
    throw error
  }
  if (lease !== own) d.leases.putBack(own)
  // Behind a key that is still there, the watch wakes it when its turn comes, as after its own join.
  if (d.hub.placeOf(req, req.owner) !== 'behind') d.hub.wakeOwner(req, req.owner)
  return res.succeeded
}

/**
 * Builds, during the hold, the txn with which the local holder `holder` releases the mutex and puts `join`'s key
 * in line (`releaseAndJoin`), and encodes it where the client can (`prepareTxn`): that work then leaves the
 * handoff's path, on which only sending it is left (building and encoding it there took 30-45 µs of the releaser's
 * side under contention, bench/ETCD-CPU.md). Only where the head's key goes on the holder's own lease: a lease of
 * its own may have to be granted first, at the release. The release checks that it still applies.
 */
export function prepareRelease(d: AcquireDeps, holder: KeyedOwner, join: PendingJoin): void {
  if (join.prepared !== undefined || !reusable(d, holder.lease, join.req)) return
  const { key, txn } = releaseTxn(d, holder, join.req, holder.lease)
  join.prepared = { holder, key, send: d.client.kv.prepareTxn?.(txn) ?? (() => d.client.kv.txn(txn)) }
}

/**
 * Whether the head's key goes on the lease of the holder whose release it joins with: that lease carries nothing
 * once the txn is through, unless the key would then have the holder's name (Go's layout) or the lease is too
 * short for the head's TTL.
 */
function reusable(d: AcquireDeps, own: OwnerLease, req: AcquireRequest): boolean {
  return !d.layout.keyNamesLease && own.ttlS * 1_000 >= req.ttlMs && d.leases.remainingMs(own) > 0
}

/** The txn of `releaseAndJoin`: `holder` released, and `req`'s key put in line on `lease` (that key, and the txn). */
function releaseTxn(
  d: AcquireDeps,
  holder: KeyedOwner,
  req: AcquireRequest,
  lease: OwnerLease,
): { key: string; txn: EtcdTxnRequest } {
  const key = d.layout.ownerKey(req, lease.id, req.owner)
  const put = putOp(key, d.layout.ownerValue(req.owner), lease.id)
  const line = {
    request_txn: { compare: [createdAt(key, 0n)], success: [put, { request_range: lineRange(d, req) }] },
  }
  const txn = {
    compare: [createdAt(holder.key, holder.revision)],
    success: [{ request_delete_range: { key: Buffer.from(holder.key) } }, line],
    failure: [line],
  }
  return { key, txn }
}
