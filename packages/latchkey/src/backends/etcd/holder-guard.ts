/**
 * Holder guards: a txn compare that holds only while a given lease still holds its lock, for the caller's own
 * writes (etcd's Go `concurrency` package uses ownership the same way, as a condition in later writes).
 */
import type { LockRef } from '../../backend/types.js'
import { NotLockHolderError } from '../../errors.js'
import type { AcquireDeps } from './acquire.js'
import { type EtcdCompare, unavailable } from './etcd-client.js'
import { prefixRange } from './keys.js'
import { createdAt } from './owners.js'

/** A txn guard proving a lease still holds its lock: `Compare(CreateRevision(holderKey) == token)`. */
export interface EtcdHolderGuard {
  /** The holder's etcd key. */
  readonly key: string
  /** Its create revision (= the lease's fencing token), as etcd3 builders take it. */
  readonly createRevision: string
  /** The raw `Compare` for `client.kv.txn({ compare: [guard.compare, ...], ... })`. */
  readonly compare: EtcdCompare
}

/** The guard of the holder of `ref` with `ref.token` (see `EtcdBackend.holderGuard`); `server` names the endpoints. */
export async function holderGuard(
  d: AcquireDeps,
  server: string,
  ref: LockRef & { readonly token: bigint },
): Promise<EtcdHolderGuard> {
  let key = d.owners.holderByToken(ref.key, ref.kind, ref.token)?.key
  if (key === undefined) {
    const r = prefixRange(d.layout.kindPrefix(ref.key, ref.kind))
    const res = await d.client.kv
      .range({ key: r.start, range_end: r.end, keys_only: true })
      .catch((error: unknown) => Promise.reject(unavailable(error, `reading "${ref.key}"`, server)))
    key = res.kvs.find((kv) => BigInt(kv.create_revision) === ref.token)?.key.toString()
  }
  if (key === undefined) {
    throw new NotLockHolderError(`etcd backend: no holder of "${ref.key}" has token ${ref.token} any more`, {
      lockName: ref.key,
    })
  }
  return { key, createRevision: ref.token.toString(), compare: createdAt(key, ref.token) }
}
