/**
 * The few jute records a lock session exchanges with ZooKeeper, encoded and decoded by hand: request frames (a
 * length prefix, the request header, the body) written straight into one buffer each, and the replies read where
 * they lie in the frame. node-zookeeper-client builds a record object per request and reply and walks its field list
 * for each; in a profile of 10 waiters that client was an eighth of a process's CPU (bench/ZOOKEEPER-CURATOR.md).
 */
import type { ZkStat } from '../zk-client.js'

/** Op codes (ZooDefs.OpCode). */
export const OP = Object.freeze({
  create: 1,
  delete: 2,
  exists: 3,
  getData: 4,
  setData: 5,
  getChildren: 8,
  ping: 11,
  multi: 14,
  create2: 15,
  closeSession: -11,
  setWatches: 101,
})

/** Reserved xids: a watch event, a ping's reply, SetWatches' reply. */
export const XID = Object.freeze({ watchEvent: -1, ping: -2, setWatches: -8 })

/** A serialized Stat: 6 longs and 5 ints. */
export const STAT_BYTES = 68

/** `world:anyone` with every permission (OPEN_ACL_UNSAFE): a vector of one ACL, encoded once. */
const OPEN_ACL = (() => {
  const b = Buffer.alloc(4 + 4 + 4 + 5 + 4 + 6)
  let at = b.writeInt32BE(1, 0)
  at = b.writeInt32BE(31, at)
  at = b.writeInt32BE(5, at)
  at += b.write('world', at)
  at = b.writeInt32BE(6, at)
  b.write('anyone', at)
  return b
})()

/**
 * Writes one request frame: `frame(xid, type, bodyBytes)` then the body's fields in order, `done()` for the buffer.
 * The body's size is computed by the caller (strings by `Buffer.byteLength`), so each frame is one allocation.
 */
export class FrameWriter {
  private readonly buf: Buffer
  private at = 12

  constructor(xid: number, type: number, bodyBytes: number) {
    this.buf = Buffer.allocUnsafe(12 + bodyBytes)
    this.buf.writeInt32BE(8 + bodyBytes, 0)
    this.buf.writeInt32BE(xid, 4)
    this.buf.writeInt32BE(type, 8)
  }

  int(value: number): this {
    this.at = this.buf.writeInt32BE(value, this.at)
    return this
  }

  /** A long, as the 8 big-endian bytes the server sent it in. */
  long(value: Buffer): this {
    this.at += value.copy(this.buf, this.at, 0, 8)
    return this
  }

  bool(value: boolean): this {
    this.at = this.buf.writeUInt8(value ? 1 : 0, this.at)
    return this
  }

  /** A ustring: its UTF-8 length, then the bytes (`bytes` is that length, computed by the caller). */
  string(value: string, bytes: number): this {
    this.at = this.buf.writeInt32BE(bytes, this.at)
    this.at += this.buf.write(value, this.at, bytes, 'utf8')
    return this
  }

  /** A buffer: its length (-1 for null), then the bytes. */
  buffer(value: Buffer | null): this {
    if (value === null) return this.int(-1)
    this.at = this.buf.writeInt32BE(value.length, this.at)
    this.at += value.copy(this.buf, this.at)
    return this
  }

  /** The open ACL (every create of latchkey's uses it). */
  openAcl(): this {
    this.at += OPEN_ACL.copy(this.buf, this.at)
    return this
  }

  done(): Buffer {
    return this.buf
  }
}

/** Bytes of a ustring field (length prefix included). */
export const stringBytes = (bytes: number): number => 4 + bytes
/** Bytes of the open ACL field. */
export const OPEN_ACL_BYTES = OPEN_ACL.length

/** A create body: path, data, acl, flags. */
export function createBytes(pathBytes: number, data: Buffer): number {
  return stringBytes(pathBytes) + 4 + data.length + OPEN_ACL_BYTES + 4
}

/** Reads a Stat at `at` of `frame`; the longs are views of one copy (the frame's slab is reused by later reads). */
export function readStat(frame: Buffer, at: number): ZkStat {
  if (at + STAT_BYTES > frame.length) throw new RangeError(`a Stat at ${at} is out of the reply's range`)
  const longs = Buffer.allocUnsafe(40)
  frame.copy(longs, 0, at, at + 32)
  frame.copy(longs, 32, at + 44, at + 52)
  return {
    czxid: longs.subarray(0, 8),
    mzxid: longs.subarray(8, 16),
    ctime: longs.subarray(16, 24),
    mtime: longs.subarray(24, 32),
    version: frame.readInt32BE(at + 32),
    ephemeralOwner: longs.subarray(32, 40),
    numChildren: frame.readInt32BE(at + 56),
  }
}

/** A ustring at `at`: the string (undefined for null) and where the next field starts. */
export function readString(frame: Buffer, at: number): { value: string | undefined; next: number } {
  const length = frame.readInt32BE(at)
  if (length < 0) return { value: undefined, next: at + 4 }
  return { value: frame.toString('utf8', at + 4, at + 4 + length), next: at + 4 + length }
}

/** A buffer at `at`: a copy of the bytes (empty for null) and where the next field starts. */
export function readBuffer(frame: Buffer, at: number): { value: Buffer; next: number } {
  const length = frame.readInt32BE(at)
  if (length <= 0) return { value: Buffer.alloc(0), next: at + 4 + Math.max(0, length) }
  return { value: Buffer.from(frame.subarray(at + 4, at + 4 + length)), next: at + 4 + length }
}

/** A vector of ustrings at `at` (a getChildren reply). */
export function readChildren(frame: Buffer, at: number): string[] {
  const count = frame.readInt32BE(at)
  const children = new Array<string>(Math.max(0, count))
  let next = at + 4
  for (let i = 0; i < count; i++) {
    const length = frame.readInt32BE(next)
    children[i] = frame.toString('utf8', next + 4, next + 4 + length)
    next += 4 + Math.max(0, length)
  }
  return children
}
