/** The holder state of an owner: kept by this backend, or read back from etcd (a holder of another instance). */
import type { HolderRef, LockKind } from '../../backend/types.js'
import { monotonicNow } from '../../core/clock.js'
import type { AcquireDeps } from './acquire.js'
import { prefixRange } from './keys.js'
import type { KeyedOwner } from './owners.js'

/** The holder state of `ref.owner`: local, or read back from etcd (a holder of another backend instance). */
export async function findHolder(d: AcquireDeps, ref: HolderRef): Promise<KeyedOwner | undefined> {
  const local = d.owners.get(ref.owner, ref.key, ref.kind)
  if (local !== undefined) return local.role === 'holder' ? local : undefined
  const r = prefixRange(d.layout.kindPrefix(ref.key, ref.kind))
  const res = await d.client.kv.range({ key: r.start, range_end: r.end })
  const kv = res.kvs.find((k) => k.value.toString() === ref.owner)
  if (kv === undefined) return undefined
  const lease = { id: kv.lease, asked: 0, ttlS: 0, refreshedAt: monotonicNow() }
  return holderOf(ref.key, ref.kind, kv.key.toString(), BigInt(kv.create_revision), lease)
}

function holderOf(
  lockKey: string,
  kind: LockKind,
  key: string,
  revision: bigint,
  lease: KeyedOwner['lease'],
): KeyedOwner {
  return { role: 'holder', lockKey, kind, key, revision, lease }
}
