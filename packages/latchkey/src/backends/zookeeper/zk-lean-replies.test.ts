import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { decodeRepliesLean } from './zk-lean-replies.js'

const require = createRequire(import.meta.url)
type Decoder = new () => { deserialize(buffer: Buffer, offset: number): number } & Record<string, unknown>
const jute = require('node-zookeeper-client/lib/jute/index.js') as {
  protocol: Record<string, Decoder>
  data: Record<string, Decoder>
}

/** A serialized Stat whose every byte differs, so a field read from the wrong place shows. */
function stat(): Buffer {
  return Buffer.from(Array.from({ length: 68 }, (_, i) => (i * 7 + 3) & 0xff))
}
function ustring(s: string | null): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(s === null ? -1 : Buffer.byteLength(s), 0)
  return s === null ? b : Buffer.concat([b, Buffer.from(s)])
}
function int(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n, 0)
  return b
}
/** The record's fields as plain values (Buffers as byte arrays), for comparing two decoders' output. */
function fields(record: Record<string, unknown>, names: string[]): unknown {
  const plain = (v: unknown): unknown =>
    Buffer.isBuffer(v)
      ? [...v]
      : v !== null && typeof v === 'object' && !Array.isArray(v)
        ? fields(
            v as Record<string, unknown>,
            Object.keys(v).filter((k) => k !== 'specification' && k !== 'chrootPath'),
          )
        : v
  return Object.fromEntries(names.map((n) => [n, plain(record[n])]))
}

describe('zookeeper lean reply decoders', () => {
  it('read a reply header, a listing and an exists exactly as the client decodes them, at any offset', () => {
    const cases: [string, string[], Buffer][] = [
      ['ReplyHeader', ['xid', 'zxid', 'err'], Buffer.concat([int(42), stat().subarray(0, 8), int(-101)])],
      [
        'GetChildren2Response',
        ['children', 'stat'],
        Buffer.concat([int(4), ustring('lock-0000000001'), ustring(''), ustring('héllo'), ustring(null), stat()]),
      ],
      ['GetChildren2Response', ['children', 'stat'], Buffer.concat([int(-1), stat()])],
      ['ExistsResponse', ['stat'], stat()],
    ]
    const pad = Buffer.from([9, 9, 9])
    const original = cases.map(([name, names, body]) => {
      const r = new (jute.protocol[name] as Decoder)()
      const read = r.deserialize(Buffer.concat([pad, body]), pad.length)
      return { read, fields: fields(r, names) }
    })
    const before = [jute.protocol.ReplyHeader, jute.protocol.GetChildren2Response, jute.protocol.ExistsResponse]
    decodeRepliesLean()
    // Installed: the decoders compared below are the lean ones.
    expect([jute.protocol.ReplyHeader, jute.protocol.GetChildren2Response, jute.protocol.ExistsResponse]).not.toContain(
      before[0],
    )
    expect(jute.protocol.GetChildren2Response).not.toBe(before[1])
    expect(jute.protocol.ExistsResponse).not.toBe(before[2])
    cases.forEach(([name, names, body], i) => {
      const r = new (jute.protocol[name] as Decoder)()
      const read = r.deserialize(Buffer.concat([pad, body]), pad.length)
      expect({ read, fields: fields(r, names) }).toEqual(original[i])
    })
    // The Stat a CREATE2 reply carries is decoded through the same class.
    const s = new (jute.data.Stat as Decoder)()
    expect(s.deserialize(stat(), 0)).toBe(68)
    expect((s.mtime as Buffer).readBigInt64BE(0)).toBe(stat().readBigInt64BE(24))
    expect(s.numChildren).toBe(stat().readInt32BE(56))
  })
})
