/**
 * Semaphore tries: permits are slot keys `<prefix>/<name>/semaphore/<permits>.<0..permits-1>`. A try reads the
 * taken slots, then one txn takes the first still-free slot among a few free ones it saw (nested `If
 * Version(slot) == 0 Then Put Else <next slot>` txns, etcd 3.3+), so concurrent acquirers of different permits
 * never conflict and a full semaphore costs one range and writes nothing.
 *
 * The count in force is the one in the holders' slot keys. The txn also requires that no slot of another count
 * exists, so two first acquirers with different counts never both win; the loser's next round reads the
 * winner's count and reports it. Nothing here grows with `permits`: a try costs O(holders).
 */
import { shuffle } from '../../backend/shuffle.js'
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import { type AcquireDeps, leaseFor, putOp, won } from './acquire.js'
import {
  type EtcdCompare,
  type EtcdKeyValue,
  type EtcdTxnRequest,
  type EtcdTxnResponse,
  isLeaseGone,
} from './etcd-client.js'
import { type KeyRange, prefixRange } from './keys.js'

/** Rounds of "read the free slots, take one" before a contended try reports a miss. */
const MAX_ROUNDS = 4
/** Slots offered in one txn (etcd bounds the operations of a txn). */
const MAX_OFFERED = 8

/** A plain semaphore try. */
export async function acquireSlot(d: AcquireDeps, req: AcquireRequest, until: number): Promise<AcquireResult> {
  const folder = prefixRange(d.layout.kindPrefix(req.key, 'semaphore'))
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const { held, foreign } = await look(d, req, folder)
    if (foreign === undefined) return { acquired: false }
    const slots = held.map((kv) => d.layout.parse(kv.key, req.key))
    const permitsInForce = slots.find((s) => s?.permits !== undefined)?.permits
    if (permitsInForce !== undefined && permitsInForce !== req.permits) return { acquired: false, permitsInForce }
    if (held.length >= req.permits) return { acquired: false }
    const taken = new Set(slots.map((s) => s?.slot))
    const offered = freeSlots(req.permits, taken, MAX_OFFERED)
    const { lease, refreshed } = await leaseFor(d, req, until)
    let res: EtcdTxnResponse
    try {
      res = await d.client.kv.txn({
        compare: [...noOtherCount(d, req), ...foreign],
        success: [{ request_txn: firstFree(d, req, offered, lease.id) }],
      })
    } catch (error) {
      if (!isLeaseGone(error)) throw error
      d.owners.delete(req.owner)
      continue
    }
    // Not succeeded: a holder of another count got in since the range (the next round reports its count), or a
    // key appeared in a foreign range (the next round reads it).
    const slot = res.succeeded ? takenSlot(res.responses[0]?.response_txn, offered) : undefined
    if (slot !== undefined) {
      const key = d.layout.slotKey(req, req.permits, slot)
      return won(d, req, { lease, key, revision: BigInt(res.header.revision), until, refreshed })
    }
  }
  return { acquired: false, retryAfterMs: 5 }
}

/**
 * The taken slots, and the compares keeping out another program's keys (Go's mutex keys, in the etcd layout):
 * `foreign` is undefined when such a key blocks the permit now, else compares that no key of those ranges was
 * created or changed since this read, so that a Go waiter queuing meanwhile (which would then not wait for this
 * permit) fails the txn. Where there are such ranges, one read of the whole name serves both.
 */
async function look(
  d: AcquireDeps,
  req: AcquireRequest,
  folder: KeyRange,
): Promise<{ held: EtcdKeyValue[]; foreign: EtcdCompare[] | undefined }> {
  const ranges = d.layout.foreignRanges(req)
  if (ranges.length === 0) {
    const res = await d.client.kv.range({ key: folder.start, range_end: folder.end, keys_only: true })
    return { held: res.kvs, foreign: [] }
  }
  const name = prefixRange(d.layout.lockPrefix(req.key))
  const res = await d.client.kv.range({ key: name.start, range_end: name.end })
  const held = res.kvs.filter((kv) => inside(kv.key, folder))
  if (res.kvs.some((kv) => d.layout.isForeign(kv) && ranges.some((r) => inside(kv.key, r)))) {
    return { held, foreign: undefined }
  }
  const below = (BigInt(res.header.revision) + 1n).toString()
  const foreign = ranges.map(
    (r): EtcdCompare => ({ key: r.start, range_end: r.end, target: 'Mod', result: 'Less', mod_revision: below }),
  )
  return { held, foreign }
}

function inside(key: Buffer, range: KeyRange): boolean {
  return Buffer.compare(key, range.start) >= 0 && Buffer.compare(key, range.end) < 0
}

/** No slot key of another permit count exists. */
function noOtherCount(d: AcquireDeps, req: AcquireRequest): EtcdCompare[] {
  return d.layout
    .otherCountRanges(req, req.permits)
    .map((r): EtcdCompare => ({ key: r.start, range_end: r.end, target: 'Version', result: 'Equal', version: '0' }))
}

/** `If slot[0] free Then put Else (If slot[1] free Then put Else ...)`. */
function firstFree(d: AcquireDeps, req: AcquireRequest, slots: readonly number[], leaseId: string): EtcdTxnRequest {
  let txn: EtcdTxnRequest = {}
  for (let i = slots.length - 1; i >= 0; i--) {
    const key = d.layout.slotKey(req, req.permits, slots[i] as number)
    txn = {
      compare: [{ key: Buffer.from(key), target: 'Version', result: 'Equal', version: '0' }],
      success: [putOp(key, d.layout.ownerValue(req.owner), leaseId)],
      failure: i === slots.length - 1 ? [] : [{ request_txn: txn }],
    }
  }
  return txn
}

/** Which offered slot the nested txn took, if any. */
function takenSlot(res: EtcdTxnResponse | undefined, slots: readonly number[]): number | undefined {
  let level: EtcdTxnResponse | undefined = res
  for (const slot of slots) {
    if (level === undefined) return undefined
    if (level.succeeded) return slot
    level = level.responses[0]?.response_txn
  }
  return undefined
}

/**
 * Up to `n` free slots below `permits`, in random order (concurrent acquirers then rarely race for one slot).
 * O(holders + n) whatever `permits` is: few slots are listed, many are drawn at random, and then at least half
 * of them are free, so a draw hits a taken slot less than half the time.
 */
export function freeSlots(permits: number, taken: ReadonlySet<number | undefined>, n: number): number[] {
  if (permits <= 2 * (taken.size + n)) {
    const free: number[] = []
    for (let i = 0; i < permits; i++) if (!taken.has(i)) free.push(i)
    return shuffle(free).slice(0, n)
  }
  const picked = new Set<number>()
  while (picked.size < n) {
    const slot = Math.floor(Math.random() * permits)
    if (!taken.has(slot)) picked.add(slot)
  }
  return [...picked]
}
