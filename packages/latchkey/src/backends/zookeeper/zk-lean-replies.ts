/**
 * Leaner decoders for the replies a lock exchanges most (a reply's header, a listing, an exists, and the Stat they
 * and CREATE2 carry), put in place of node-zookeeper-client's own in its jute module (process-wide, once, as
 * zk-create2.ts does for CREATE's reply). The client's generic record runs, for every record it builds, a forEach
 * over the record's fields with a regular expression per vector or nested field, and allocates a zero-filled
 * 8-byte Buffer for each long twice (a default in the constructor, then the value read): a reply with a Stat is
 * 13 such Buffers. In a CPU profile of 10 waiters that decoding and its garbage were several percent of a
 * process's time. These read the same fields in the same order into the same shapes (longs as 8-byte Buffers,
 * here views of one copy per record), and keep the client's prototypes (its serialize, byteLength, toString, the
 * field list) for anything else.
 *
 * Replaced only when the client's field lists are the ones these decoders read; otherwise nothing changes. A record
 * built here has its fields only once it is deserialized, which is how the client uses reply records.
 */
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

type Spec = readonly { readonly name: string; readonly type: string }[]
type RecordClass = new () => object
interface Jute {
  protocol: Record<string, RecordClass>
  data: Record<string, RecordClass>
}
type Read = (self: Record<string, unknown>, buffer: Buffer, offset: number) => number

const STAT: Spec = [
  { name: 'czxid', type: 'long' },
  { name: 'mzxid', type: 'long' },
  { name: 'ctime', type: 'long' },
  { name: 'mtime', type: 'long' },
  { name: 'version', type: 'int' },
  { name: 'cversion', type: 'int' },
  { name: 'aversion', type: 'int' },
  { name: 'ephemeralOwner', type: 'long' },
  { name: 'dataLength', type: 'int' },
  { name: 'numChildren', type: 'int' },
  { name: 'pzxid', type: 'long' },
]
const REPLY_HEADER: Spec = [
  { name: 'xid', type: 'int' },
  { name: 'zxid', type: 'long' },
  { name: 'err', type: 'int' },
]
const GET_CHILDREN2_RESPONSE: Spec = [
  { name: 'children', type: 'vector<ustring>' },
  { name: 'stat', type: 'data.Stat' },
]
const EXISTS_RESPONSE: Spec = [{ name: 'stat', type: 'data.Stat' }]
/** A serialized Stat: 6 longs and 5 ints. */
const STAT_BYTES = 68

let installed = false

/** A record class with `Original`'s prototype and field list whose `deserialize` is `read`. */
function lean(Original: RecordClass, spec: Spec, read: Read): RecordClass {
  function Lean(this: { chrootPath: string | undefined }): void {
    this.chrootPath = undefined
  }
  Lean.prototype = Object.create(Original.prototype)
  Lean.prototype.constructor = Lean
  Lean.prototype.specification = spec
  Lean.prototype.deserialize = function deserialize(this: Record<string, unknown>, buffer: Buffer, offset: number) {
    return read(this, buffer, offset)
  }
  return Lean as unknown as RecordClass
}

function sameSpec(Original: RecordClass | undefined, expected: Spec): boolean {
  if (Original === undefined) return false
  const spec = (new Original() as { specification?: Spec }).specification
  return (
    Array.isArray(spec) &&
    spec.length === expected.length &&
    spec.every((f, i) => f.name === expected[i]?.name && f.type === expected[i]?.type)
  )
}

const readStat: Read = (self, buffer, offset) => {
  if (offset < 0 || offset + STAT_BYTES > buffer.length) throw new Error(`a Stat at ${offset} is out of buffer range`)
  // The six longs, copied into one buffer of their own (the frame may be a view of a larger read buffer).
  const longs = Buffer.allocUnsafe(48)
  buffer.copy(longs, 0, offset, offset + 32)
  buffer.copy(longs, 32, offset + 44, offset + 52)
  buffer.copy(longs, 40, offset + 60, offset + 68)
  self.czxid = longs.subarray(0, 8)
  self.mzxid = longs.subarray(8, 16)
  self.ctime = longs.subarray(16, 24)
  self.mtime = longs.subarray(24, 32)
  self.version = buffer.readInt32BE(offset + 32)
  self.cversion = buffer.readInt32BE(offset + 36)
  self.aversion = buffer.readInt32BE(offset + 40)
  self.ephemeralOwner = longs.subarray(32, 40)
  self.dataLength = buffer.readInt32BE(offset + 52)
  self.numChildren = buffer.readInt32BE(offset + 56)
  self.pzxid = longs.subarray(40, 48)
  return STAT_BYTES
}

/**
 * Puts the lean decoders in place in the node-zookeeper-client copy latchkey loads (see the module comment); once.
 * Does nothing when that copy's records are not the expected ones.
 */
export function decodeRepliesLean(): void {
  if (installed) return
  installed = true
  let jute: Jute
  try {
    jute = require('node-zookeeper-client/lib/jute/index.js') as Jute
  } catch {
    return
  }
  const { Stat } = jute.data
  const { ReplyHeader, GetChildren2Response, ExistsResponse } = jute.protocol
  if (
    !sameSpec(Stat, STAT) ||
    !sameSpec(ReplyHeader, REPLY_HEADER) ||
    !sameSpec(GetChildren2Response, GET_CHILDREN2_RESPONSE) ||
    !sameSpec(ExistsResponse, EXISTS_RESPONSE)
  ) {
    return
  }
  const LeanStat = lean(Stat as RecordClass, STAT, readStat)
  const statAt = (self: Record<string, unknown>, buffer: Buffer, offset: number): number => {
    const stat = new LeanStat() as Record<string, unknown>
    self.stat = stat
    return readStat(stat, buffer, offset)
  }
  jute.data.Stat = LeanStat
  jute.protocol.ReplyHeader = lean(ReplyHeader as RecordClass, REPLY_HEADER, (self, buffer, offset) => {
    if (offset < 0 || offset + 16 > buffer.length) throw new Error(`a reply header at ${offset} is out of range`)
    self.xid = buffer.readInt32BE(offset)
    const zxid = Buffer.allocUnsafe(8)
    buffer.copy(zxid, 0, offset + 4, offset + 12)
    self.zxid = zxid
    self.err = buffer.readInt32BE(offset + 12)
    return 16
  })
  jute.protocol.GetChildren2Response = lean(
    GetChildren2Response as RecordClass,
    GET_CHILDREN2_RESPONSE,
    (self, buffer, offset) => {
      let at = offset
      const count = buffer.readInt32BE(at)
      at += 4
      let children: string[] | undefined
      if (count !== -1) {
        children = new Array<string>(count)
        for (let i = 0; i < count; i++) {
          const length = buffer.readInt32BE(at)
          at += 4
          // A null string (length -1) reads as undefined, as the client's decoder has it.
          children[i] = length === -1 ? (undefined as unknown as string) : buffer.toString('utf8', at, at + length)
          if (length > 0) at += length
        }
      }
      self.children = children
      return at - offset + statAt(self, buffer, at)
    },
  )
  jute.protocol.ExistsResponse = lean(ExistsResponse as RecordClass, EXISTS_RESPONSE, statAt)
}
