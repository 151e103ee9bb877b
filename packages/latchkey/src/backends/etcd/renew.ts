/**
 * renew on etcd: a keepalive of the holder's lease checked against its key (still there, same create revision,
 * same lease), or, when the renew asks for more seconds than the lease has, a move of the key to a longer lease.
 */
import type { RenewRequest } from '../../backend/types.js'
import { monotonicNow } from '../../core/clock.js'
import type { AcquireDeps } from './acquire.js'
import type { EtcdCompare } from './etcd-client.js'
import { findHolder } from './find-holder.js'
import { ttlSeconds } from './leases.js'
import { createdAt, type KeyedOwner } from './owners.js'

/** Renews `request`'s hold: false when its key is gone or on another lease. */
export async function renewHolder(d: AcquireDeps, request: RenewRequest): Promise<boolean> {
  const holder = await findHolder(d, request)
  if (holder === undefined) return false
  if (ttlSeconds(request.ttlMs) > holder.lease.ttlS)
    return await moveToLongerLease(d, holder, request.owner, request.ttlMs, monotonicNow() + request.ttlMs)
  const [alive, check] = await Promise.all([
    d.leases.refresh(holder.lease),
    d.client.kv.range({ key: Buffer.from(holder.key) }),
  ])
  const kv = check.kvs[0]
  return alive && kv !== undefined && BigInt(kv.create_revision) === holder.revision && kv.lease === holder.lease.id
}

/** A renew asking for more seconds than the lease has: move the key to a new, longer lease. */
async function moveToLongerLease(
  d: AcquireDeps,
  holder: KeyedOwner,
  owner: string,
  ttlMs: number,
  until: number,
): Promise<boolean> {
  const lease = await d.leases.take(ttlSeconds(ttlMs), until)
  const value = Buffer.from(d.layout.ownerValue(owner))
  const put = { request_put: { key: Buffer.from(holder.key), value, lease: lease.id } }
  const res = await d.client.kv.txn({
    compare: [createdAt(holder.key, holder.revision), leaseIs(holder.key, holder.lease.id)],
    success: [put],
  })
  d.leases.revokeLater(res.succeeded ? holder.lease : lease)
  if (res.succeeded) holder.lease = lease
  return res.succeeded
}

function leaseIs(key: string, leaseId: string): EtcdCompare {
  return { key: Buffer.from(key), target: 'Lease', result: 'Equal', lease: leaseId }
}
