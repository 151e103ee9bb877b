/**
 * The etcd backend's operator reads. One range per lock kind folder (the mutex/read-write family, the semaphore);
 * a key's value is its owner id, its create revision the token. In the family, keys are in line by create
 * revision: an exclusive key holds when it is first, a reader when no exclusive key is before it; the others are
 * queued fair waiters, waiting writers and the first waiting mutex of each process (the others wait in their
 * process). Every semaphore slot is held.
 * The expiry is the remaining TTL of the key's lease (`LeaseTimeToLive`, whole seconds).
 */
import {
  type HolderInfo,
  inspection,
  type ListRequest,
  type LockInspection,
  type LockSummary,
  lockKeysOf,
  summariesOf,
  type WaiterInfo,
} from '../../backend/inspection.js'
import type { LockKind } from '../../backend/types.js'
import { type EtcdClient, type EtcdKeyValue, unavailable } from './etcd-client.js'
import { type EtcdKeyLayout, FAMILY, isExclusiveKind, prefixRange } from './keys.js'

/** etcd3's LeaseTimeToLive, which the backend's client type leaves out (only operators need it). */
interface LeaseTtlClient {
  leaseTimeToLive?(request: { ID: string }): Promise<{ TTL: string }>
}

/** What the reads need of the backend. */
export interface EtcdInspectDeps {
  readonly client: EtcdClient
  readonly layout: EtcdKeyLayout
  readonly server: string
}

interface Entry {
  readonly kv: EtcdKeyValue
  readonly kind: LockKind
  readonly permits?: number | undefined
}

async function entries(d: EtcdInspectDeps, key: string, kinds: readonly LockKind[]): Promise<Entry[]> {
  const ranges = await Promise.all(
    kinds.map((kind) => {
      const r = prefixRange(d.layout.kindPrefix(key, kind))
      return d.client.kv.range({ key: r.start, range_end: r.end })
    }),
  )
  // In Go's layout one kind's folder holds the others' (`<name>/` contains `<name>/read/`): each key once.
  const seen = new Set<string>()
  return ranges
    .flatMap((res) => res.kvs)
    .filter((kv) => {
      const id = kv.key.toString('latin1')
      if (seen.has(id)) return false
      seen.add(id)
      return true
    })
    .flatMap((kv) => {
      const parsed = d.layout.parse(kv.key, key)
      return parsed === undefined ? [] : [{ kv, kind: parsed.kind, permits: parsed.permits }]
    })
    .sort((a, b) => Number(BigInt(a.kv.create_revision) - BigInt(b.kv.create_revision)))
}

/** The remaining TTL of each lease, as an epoch-ms expiry (undefined when the client cannot ask). */
async function expiries(d: EtcdInspectDeps, leases: readonly string[]): Promise<Map<string, number>> {
  const client = d.client.leaseClient as LeaseTtlClient
  const out = new Map<string, number>()
  if (typeof client.leaseTimeToLive !== 'function') return out
  const now = Date.now()
  await Promise.all(
    [...new Set(leases)].map(async (id) => {
      const res = await client.leaseTimeToLive?.({ ID: id })
      const ttl = Number(res?.TTL ?? -1)
      if (ttl >= 0) out.set(id, now + ttl * 1_000)
    }),
  )
  return out
}

/** Both kind folders of `key`, as holders and queued waiters. */
export async function inspectEtcd(d: EtcdInspectDeps, key: string): Promise<LockInspection> {
  try {
    const [family, semaphore] = await Promise.all([entries(d, key, FAMILY), entries(d, key, ['semaphore'])])
    const held: Entry[] = []
    const waiters: WaiterInfo[] = []
    let exclusiveBefore = false
    family.forEach((e, i) => {
      const holds = isExclusiveKind(e.kind) ? i === 0 : !exclusiveBefore
      if (isExclusiveKind(e.kind)) exclusiveBefore = true
      if (holds) held.push(e)
      else waiters.push({ owner: e.kv.value.toString(), kind: e.kind })
    })
    held.push(...semaphore)
    const ttl = await expiries(
      d,
      held.map((e) => e.kv.lease),
    )
    const holders: HolderInfo[] = held.map((e) => {
      const expiresAt = ttl.get(e.kv.lease)
      return {
        owner: e.kv.value.toString(),
        kind: e.kind,
        token: BigInt(e.kv.create_revision),
        ...(expiresAt === undefined ? {} : { expiresAt }),
        ...(e.permits === undefined ? {} : { permits: e.permits }),
      }
    })
    return inspection(key, holders, waiters)
  } catch (error) {
    throw unavailable(error, `inspecting "${key}"`, d.server)
  }
}

/** The lock names under the prefix that have keys, each inspected. */
export async function listEtcd(d: EtcdInspectDeps, request: ListRequest): Promise<LockSummary[]> {
  const r = d.layout.namesRange(request.prefix)
  let names: string[]
  try {
    const res = await d.client.kv.range({ key: r.start, range_end: r.end, keys_only: true })
    names = res.kvs.flatMap((kv) => {
      const parsed = d.layout.parse(kv.key)
      return parsed === undefined ? [] : [parsed.lockKey]
    })
  } catch (error) {
    throw unavailable(error, `listing "${request.prefix}"`, d.server)
  }
  return summariesOf(lockKeysOf(names, request), request.limit, (key) => inspectEtcd(d, key))
}
