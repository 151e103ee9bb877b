/**
 * The request frames latchkey sends and the decoding of their replies, one function per operation: what the wire
 * client queues. Each builder takes the xid; each decoder reads the body of a successful reply at `at`.
 */
import type { ZkOpResult, ZkStat } from '../zk-client.js'
import {
  createBytes,
  FrameWriter,
  OP,
  readBuffer,
  readStat,
  readString,
  STAT_BYTES,
  stringBytes,
  XID,
} from './zk-jute.js'

/** create / create2: path, data, the open ACL, flags (the mode). */
export function createFrame(xid: number, op: number, path: string, data: Buffer, mode: number): Buffer {
  const pathBytes = Buffer.byteLength(path)
  return new FrameWriter(xid, op, createBytes(pathBytes, data))
    .string(path, pathBytes)
    .buffer(data)
    .openAcl()
    .int(mode)
    .done()
}

/** delete: path, version. */
export function deleteFrame(xid: number, path: string, version: number): Buffer {
  const pathBytes = Buffer.byteLength(path)
  return new FrameWriter(xid, OP.delete, stringBytes(pathBytes) + 4).string(path, pathBytes).int(version).done()
}

/** exists, getData, getChildren: path, watch. */
export function readFrame(xid: number, op: number, path: string, watch: boolean): Buffer {
  const pathBytes = Buffer.byteLength(path)
  return new FrameWriter(xid, op, stringBytes(pathBytes) + 1).string(path, pathBytes).bool(watch).done()
}

/** setData: path, data (null empties it), version. */
export function setDataFrame(xid: number, path: string, data: Buffer | null, version: number): Buffer {
  const pathBytes = Buffer.byteLength(path)
  const dataBytes = 4 + (data?.length ?? 0)
  return new FrameWriter(xid, OP.setData, stringBytes(pathBytes) + dataBytes + 4)
    .string(path, pathBytes)
    .buffer(data)
    .int(version)
    .done()
}

/**
 * ConnectRequest, the first frame on a socket (no request header): protocolVersion 0, the last zxid seen, the
 * session timeout asked for, and the session to resume (id and password; zeros for a new one), not read-only.
 */
export function connectFrame(lastZxid: Buffer, timeoutMs: number, sessionId: Buffer, passwd: Buffer): Buffer {
  const b = Buffer.alloc(4 + 4 + 8 + 4 + 8 + 4 + 16 + 1)
  b.writeInt32BE(b.length - 4, 0)
  lastZxid.copy(b, 8, 0, 8)
  b.writeInt32BE(timeoutMs, 16)
  sessionId.copy(b, 20, 0, 8)
  b.writeInt32BE(16, 28)
  passwd.copy(b, 32, 0, 16)
  return b
}

/** ConnectResponse: protocolVersion, the negotiated timeout (0: the session expired), the session id and password. */
export function readConnectResponse(frame: Buffer): { timeOut: number; sessionId: Buffer; passwd: Buffer } {
  const passwd = readBuffer(frame, 20).value
  return { timeOut: frame.readInt32BE(8), sessionId: Buffer.from(frame.subarray(12, 20)), passwd }
}

/** A ping (no body; its reply carries the ping xid). */
export function pingFrame(): Buffer {
  return new FrameWriter(XID.ping, OP.ping, 0).done()
}

/** closeSession (no body). */
export function closeFrame(xid: number): Buffer {
  return new FrameWriter(xid, OP.closeSession, 0).done()
}

/**
 * SetWatches, sent first on a reconnect: the watches this client holds, so the new server keeps them, and fires at
 * once those whose node changed after `relativeZxid` (the last zxid this client saw).
 */
export function setWatchesFrame(
  relativeZxid: Buffer,
  data: readonly string[],
  exist: readonly string[],
  child: readonly string[],
): Buffer {
  const lists = [data, exist, child].map((list) => list.map((path) => ({ path, bytes: Buffer.byteLength(path) })))
  let bytes = 8
  for (const list of lists) bytes += 4 + list.reduce((sum, p) => sum + stringBytes(p.bytes), 0)
  const w = new FrameWriter(XID.setWatches, OP.setWatches, bytes).long(relativeZxid)
  for (const list of lists) {
    w.int(list.length)
    for (const p of list) w.string(p.path, p.bytes)
  }
  return w.done()
}

/** One op of a multi (a transaction): create or setData. */
export type MultiOp =
  | { readonly op: 'create'; readonly path: string; readonly data: Buffer; readonly mode: number }
  | { readonly op: 'setData'; readonly path: string; readonly data: Buffer | null; readonly version: number }

/** A multi: each op behind a MultiHeader (type, done=false, err=-1), then a closing header (-1, true, -1). */
export function multiFrame(xid: number, ops: readonly MultiOp[]): Buffer {
  const HEADER = 9
  const sized = ops.map((o) => ({ o, pathBytes: Buffer.byteLength(o.path) }))
  let bytes = HEADER
  for (const { o, pathBytes } of sized) {
    bytes += HEADER
    bytes += o.op === 'create' ? createBytes(pathBytes, o.data) : stringBytes(pathBytes) + 4 + (o.data?.length ?? 0) + 4
  }
  const w = new FrameWriter(xid, OP.multi, bytes)
  for (const { o, pathBytes } of sized) {
    if (o.op === 'create') {
      w.int(OP.create).bool(false).int(-1).string(o.path, pathBytes).buffer(o.data).openAcl().int(o.mode)
    } else {
      w.int(OP.setData).bool(false).int(-1).string(o.path, pathBytes).buffer(o.data).int(o.version)
    }
  }
  return w.int(-1).bool(true).int(-1).done()
}

/** RUNTIMEINCONSISTENCY: the result of the ops of a failed multi that did not fail themselves. */
const RUNTIME_INCONSISTENCY = -2

/** A multi's results, and the error code of the op that failed it (0 when it committed). */
export function readMulti(frame: Buffer, at: number): { results: ZkOpResult[]; err: number } {
  const results: ZkOpResult[] = []
  let err = 0
  let next = at
  for (;;) {
    const type = frame.readInt32BE(next)
    const done = frame.readUInt8(next + 4) !== 0
    next += 9
    if (done) break
    if (type === -1) {
      const code = frame.readInt32BE(next)
      next += 4
      if (err === 0 && code !== 0 && code !== RUNTIME_INCONSISTENCY) err = code
      results.push({ type })
    } else if (type === OP.create) {
      const path = readString(frame, next)
      next = path.next
      results.push(path.value === undefined ? { type } : { type, path: path.value })
    } else if (type === OP.create2) {
      const path = readString(frame, next)
      const stat = readStat(frame, path.next)
      next = path.next + STAT_BYTES
      results.push(path.value === undefined ? { type, stat } : { type, path: path.value, stat })
    } else if (type === OP.setData) {
      results.push({ type, stat: readStat(frame, next) })
      next += STAT_BYTES
    } else {
      results.push({ type }) // delete, check: nothing follows
    }
  }
  return { results, err }
}

/** A create's reply: the created path. */
export const readCreated = (frame: Buffer, at: number): string => readString(frame, at).value ?? ''

/** A create2's reply: the created path and the new node's stat. */
export function readCreated2(frame: Buffer, at: number): { path: string; stat: ZkStat } {
  const path = readString(frame, at)
  return { path: path.value ?? '', stat: readStat(frame, path.next) }
}

/** A getData's reply: the data and the stat. */
export function readData(frame: Buffer, at: number): { data: Buffer; stat: ZkStat } {
  const data = readBuffer(frame, at)
  return { data: data.value, stat: readStat(frame, data.next) }
}
