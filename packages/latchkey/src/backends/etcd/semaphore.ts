/**
 * Semaphore tries: permits are slot keys `<prefix>/<name>/semaphore/<0..permits-1>`. A try reads the taken
 * slots, then one txn takes the first still-free slot among the free ones it saw (nested `If Version(slot) == 0
 * Then Put Else <next slot>` txns, etcd 3.3+), so concurrent acquirers of different permits never conflict and a
 * full semaphore costs one range and writes nothing.
 */
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import { type AcquireDeps, leaseFor, putOp, won } from './acquire.js'
import { type EtcdTxnRequest, type EtcdTxnResponse, isLeaseGone } from './etcd-client.js'
import { prefixRange } from './keys.js'

/** Rounds of "read the free slots, take one" before a contended try reports a miss. */
const MAX_ROUNDS = 4
/** Slots offered in one txn (etcd bounds the operations of a txn). */
const MAX_OFFERED = 8

/** A plain semaphore try. */
export async function acquireSlot(d: AcquireDeps, req: AcquireRequest, until: number): Promise<AcquireResult> {
  const folder = prefixRange(d.layout.kindPrefix(req.key, 'semaphore'))
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const held = await d.client.kv.range({ key: folder.start, range_end: folder.end, keys_only: true })
    if (held.kvs.length >= req.permits) return { acquired: false }
    const taken = new Set(held.kvs.map((kv) => d.layout.parse(kv.key)?.slot))
    const free = shuffle(Array.from({ length: req.permits }, (_, i) => i).filter((i) => !taken.has(i)))
    const offered = free.slice(0, MAX_OFFERED)
    const lease = await leaseFor(d, req, until)
    let res: EtcdTxnResponse
    try {
      res = await d.client.kv.txn(firstFree(d, req, offered, lease.id))
    } catch (error) {
      if (!isLeaseGone(error)) throw error
      d.owners.delete(req.owner)
      continue
    }
    const slot = takenSlot(res, offered)
    if (slot !== undefined) {
      const key = d.layout.slotKey(req, slot)
      return won(d, req, { lease, key, revision: BigInt(res.header.revision), until })
    }
  }
  return { acquired: false, retryAfterMs: 5 }
}

/** `If slot[0] free Then put Else (If slot[1] free Then put Else ...)`. */
function firstFree(d: AcquireDeps, req: AcquireRequest, slots: readonly number[], leaseId: string): EtcdTxnRequest {
  let txn: EtcdTxnRequest = {}
  for (let i = slots.length - 1; i >= 0; i--) {
    const key = d.layout.slotKey(req, slots[i] as number)
    txn = {
      compare: [{ key: Buffer.from(key), target: 'Version', result: 'Equal', version: '0' }],
      success: [putOp(key, req.owner, leaseId)],
      failure: i === slots.length - 1 ? [] : [{ request_txn: txn }],
    }
  }
  return txn
}

/** Which offered slot the nested txn took, if any. */
function takenSlot(res: EtcdTxnResponse, slots: readonly number[]): number | undefined {
  let level: EtcdTxnResponse | undefined = res
  for (const slot of slots) {
    if (level === undefined) return undefined
    if (level.succeeded) return slot
    level = level.responses[0]?.response_txn
  }
  return undefined
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[items[i], items[j]] = [items[j] as T, items[i] as T]
  }
  return items
}
