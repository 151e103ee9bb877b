/**
 * Encoders and decoders of the etcd v3 messages the backend sends and reads (etcd's rpc.proto and kv.proto;
 * field numbers in the comments). Results have the shapes etcd3 gives (`etcd-client.ts`): int64 as decimal
 * strings, absent fields at their proto3 defaults.
 */
import type {
  EtcdCompare,
  EtcdKeyValue,
  EtcdRangeResponse,
  EtcdRequestOp,
  EtcdTxnRequest,
  EtcdTxnResponse,
} from '../etcd-client.js'
import { type ProtoReader, ProtoWriter } from './protobuf.js'

const COMPARE_RESULT = { Equal: 0, Greater: 1, Less: 2, NotEqual: 3 } as const
const COMPARE_TARGET = { Version: 0, Create: 1, Mod: 2, Value: 3, Lease: 4 } as const

/** A range request as the backend sends it. */
export interface RangeRequest {
  key: Buffer
  range_end?: Buffer
  keys_only?: boolean
  count_only?: boolean
}

// RangeRequest: key 1, range_end 2, keys_only 8, count_only 9.
function writeRange(w: ProtoWriter, r: RangeRequest): void {
  w.bytes(1, r.key).bytes(2, r.range_end).bool(8, r.keys_only).bool(9, r.count_only)
}

// Compare: result 1, target 2, key 3, version 4, create_revision 5, mod_revision 6, lease 8, range_end 64.
function writeCompare(w: ProtoWriter, c: EtcdCompare): void {
  w.int64(1, COMPARE_RESULT[c.result]).int64(2, COMPARE_TARGET[c.target]).bytes(3, c.key)
  if (c.target === 'Version') writeUnion(w, 4, c.version)
  else if (c.target === 'Create') writeUnion(w, 5, c.create_revision)
  else if (c.target === 'Mod') writeUnion(w, 6, c.mod_revision)
  else if (c.target === 'Lease') writeUnion(w, 8, c.lease)
  w.bytes(64, c.range_end)
}

/** A oneof member, written even when zero: `version == 0` must reach etcd as a set target_union. */
function writeUnion(w: ProtoWriter, field: number, value: string | undefined): void {
  if (value === undefined) return
  if (value === '0' || value === '') w.rawZero(field)
  else w.int64(field, value)
}

// RequestOp: request_range 1, request_put 2 (key 1, value 2, lease 3), request_delete_range 3 (key 1,
// range_end 2), request_txn 4. Nested messages are opened and closed in place (begin/end): every call encodes
// a few of them, and a closure each was a good part of the encoding's cost.
function writeOp(w: ProtoWriter, op: EtcdRequestOp): void {
  if (op.request_range !== undefined) {
    const at = w.begin(1)
    writeRange(w, op.request_range)
    w.end(at)
  } else if (op.request_put !== undefined) {
    const p = op.request_put
    const at = w.begin(2)
    w.bytes(1, p.key).bytes(2, p.value).int64(3, p.lease).end(at)
  } else if (op.request_delete_range !== undefined) {
    const d = op.request_delete_range
    const at = w.begin(3)
    w.bytes(1, d.key).bytes(2, d.range_end).end(at)
  } else if (op.request_txn !== undefined) {
    const at = w.begin(4)
    writeTxn(w, op.request_txn)
    w.end(at)
  }
}

// TxnRequest: compare 1, success 2, failure 3.
function writeTxn(w: ProtoWriter, t: EtcdTxnRequest): void {
  if (t.compare !== undefined)
    for (const c of t.compare) {
      const at = w.begin(1)
      writeCompare(w, c)
      w.end(at)
    }
  if (t.success !== undefined)
    for (const op of t.success) {
      const at = w.begin(2)
      writeOp(w, op)
      w.end(at)
    }
  if (t.failure !== undefined)
    for (const op of t.failure) {
      const at = w.begin(3)
      writeOp(w, op)
      w.end(at)
    }
}

/** A framed TxnRequest. */
export function encodeTxn(t: EtcdTxnRequest): Buffer {
  const w = new ProtoWriter(true)
  writeTxn(w, t)
  return w.frame()
}

/** A framed RangeRequest. */
export function encodeRange(r: RangeRequest): Buffer {
  const w = new ProtoWriter(true)
  writeRange(w, r)
  return w.frame()
}

/** A framed message with one int64 field 1 (LeaseRevoke, LeaseKeepAlive and LeaseTimeToLive requests: ID). */
export function encodeId(id: string): Buffer {
  return new ProtoWriter(true).int64(1, id).frame()
}

/** A framed LeaseGrantRequest (TTL 1). */
export function encodeLeaseGrant(ttl: number): Buffer {
  return new ProtoWriter(true).int64(1, ttl).frame()
}

/** A framed WatchRequest creating a watch of `[key, range_end)` from `startRevision`, deletes only. */
export function encodeWatchCreate(key: Buffer, rangeEnd: Buffer, startRevision: string | undefined): Buffer {
  // WatchRequest.create_request 1: key 1, range_end 2, start_revision 3, filters 5 (NOPUT = 0).
  return new ProtoWriter(true)
    .message(1, (m) => {
      m.bytes(1, key).bytes(2, rangeEnd).int64(3, startRevision)
      m.rawZero(5)
    })
    .frame()
}

/** A framed WatchRequest cancelling watch `id`. */
export function encodeWatchCancel(id: string): Buffer {
  // WatchRequest.cancel_request 2: watch_id 1 (absent = 0, etcd's first watch id).
  return new ProtoWriter(true).message(2, (m) => m.int64(1, id)).frame()
}

/** Decoders. */
export function decodeHeaderRevision(r: ProtoReader): string {
  // ResponseHeader: revision 3.
  let revision = '0'
  while (r.next()) {
    if (r.field === 3 && r.wire === 0) revision = r.int64()
    else r.skip()
  }
  return revision
}

export function decodeKeyValue(r: ProtoReader): EtcdKeyValue {
  // KeyValue: key 1, create_revision 2, mod_revision 3, version 4, value 5, lease 6.
  const kv: EtcdKeyValue = {
    key: EMPTY,
    create_revision: '0',
    mod_revision: '0',
    version: '0',
    value: EMPTY,
    lease: '0',
  }
  while (r.next()) {
    switch (r.field) {
      case 1:
        kv.key = r.bytes()
        break
      case 2:
        kv.create_revision = r.int64()
        break
      case 3:
        kv.mod_revision = r.int64()
        break
      case 4:
        kv.version = r.int64()
        break
      case 5:
        kv.value = r.bytes()
        break
      case 6:
        kv.lease = r.int64()
        break
      default:
        r.skip()
    }
  }
  return kv
}

const EMPTY = Buffer.alloc(0)

export function decodeRangeResponse(r: ProtoReader): EtcdRangeResponse {
  // RangeResponse: header 1, kvs 2, count 4.
  const out: EtcdRangeResponse = { header: { revision: '0' }, kvs: [], count: '0' }
  while (r.next()) {
    if (r.field === 1) out.header = { revision: decodeHeaderRevision(r.nested()) }
    else if (r.field === 2) out.kvs.push(decodeKeyValue(r.nested()))
    else if (r.field === 4 && r.wire === 0) out.count = r.int64()
    else r.skip()
  }
  return out
}

export function decodeTxnResponse(r: ProtoReader): EtcdTxnResponse {
  // TxnResponse: header 1, succeeded 2, responses 3 (ResponseOp: range 1, put 2, delete_range 3, txn 4).
  const out: EtcdTxnResponse = { header: { revision: '0' }, succeeded: false, responses: [] }
  while (r.next()) {
    if (r.field === 1) out.header = { revision: decodeHeaderRevision(r.nested()) }
    else if (r.field === 2 && r.wire === 0) out.succeeded = r.bool()
    else if (r.field === 3) out.responses.push(decodeResponseOp(r.nested()))
    else r.skip()
  }
  return out
}

function decodeResponseOp(r: ProtoReader): EtcdTxnResponse['responses'][number] {
  const out: EtcdTxnResponse['responses'][number] = {}
  while (r.next()) {
    if (r.field === 1) out.response_range = decodeRangeResponse(r.nested())
    else if (r.field === 3) out.response_delete_range = { deleted: decodeDeleted(r.nested()) }
    else if (r.field === 4) out.response_txn = decodeTxnResponse(r.nested())
    else r.skip()
  }
  return out
}

function decodeDeleted(r: ProtoReader): string {
  // DeleteRangeResponse: deleted 2.
  let deleted = '0'
  while (r.next()) {
    if (r.field === 2 && r.wire === 0) deleted = r.int64()
    else r.skip()
  }
  return deleted
}

/** LeaseGrantResponse (ID 2, TTL 3, error 4), LeaseKeepAliveResponse and LeaseTimeToLiveResponse (ID 2, TTL 3). */
export function decodeLease(r: ProtoReader): { ID: string; TTL: string; error: string } {
  const out = { ID: '0', TTL: '0', error: '' }
  while (r.next()) {
    if (r.field === 2 && r.wire === 0) out.ID = r.int64()
    else if (r.field === 3 && r.wire === 0) out.TTL = r.int64()
    else if (r.field === 4 && r.wire === 2) out.error = r.bytes().toString()
    else r.skip()
  }
  return out
}

/** One WatchResponse. */
export interface WatchResponse {
  revision: string
  watchId: string
  created: boolean
  canceled: boolean
  compactRevision: string
  cancelReason: string
  /** Delete events (puts are filtered out by the server). */
  deletes: EtcdKeyValue[]
}

export function decodeWatchResponse(r: ProtoReader): WatchResponse {
  // WatchResponse: header 1, watch_id 2, created 3, canceled 4, compact_revision 5, cancel_reason 6, events 11
  // (Event: type 1 (DELETE = 1), kv 2).
  const out: WatchResponse = {
    revision: '0',
    watchId: '0',
    created: false,
    canceled: false,
    compactRevision: '0',
    cancelReason: '',
    deletes: [],
  }
  while (r.next()) {
    if (r.field === 1) out.revision = decodeHeaderRevision(r.nested())
    else if (r.field === 2 && r.wire === 0) out.watchId = r.int64()
    else if (r.field === 3 && r.wire === 0) out.created = r.bool()
    else if (r.field === 4 && r.wire === 0) out.canceled = r.bool()
    else if (r.field === 5 && r.wire === 0) out.compactRevision = r.int64()
    else if (r.field === 6 && r.wire === 2) out.cancelReason = r.bytes().toString()
    else if (r.field === 11) {
      const e = r.nested()
      let type = 0
      let kv: EtcdKeyValue | undefined
      while (e.next()) {
        if (e.field === 1 && e.wire === 0) type = e.varint()
        else if (e.field === 2) kv = decodeKeyValue(e.nested())
        else e.skip()
      }
      if (type === 1 && kv !== undefined) out.deletes.push(kv)
    } else r.skip()
  }
  return out
}
