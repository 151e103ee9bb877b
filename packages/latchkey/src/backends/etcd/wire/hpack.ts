/**
 * HPACK (RFC 7541) for the gRPC client in `h2-session.ts`: a full decoder (static and dynamic tables, Huffman
 * strings, table size updates: Go's server indexes the headers it sends and refers to them afterwards), and an
 * encoder that sends every field as a literal without indexing, so that it keeps no table of its own (a
 * request's few fields are a constant block per path, built once).
 *
 * Hand-written rather than taken from npm: the maintained HTTP/2 stacks keep theirs inside (Node's is
 * nghttp2's, in C++); `hpack.js`, the npm module most installed, is a stream pipeline (readable-stream 2, last
 * changed in 2016) whose per-block cost is the kind this client exists to avoid.
 */
import { huffmanDecode } from './huffman.js'

/** RFC 7541, Appendix A: entries 1 to 61. */
const STATIC: ReadonlyArray<readonly [string, string]> = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ...[
    'accept-charset',
    'accept-encoding',
    'accept-language',
    'accept-ranges',
    'accept',
    'access-control-allow-origin',
    'age',
    'allow',
    'authorization',
    'cache-control',
    'content-disposition',
    'content-encoding',
    'content-language',
    'content-length',
    'content-location',
    'content-range',
    'content-type',
    'cookie',
    'date',
    'etag',
    'expect',
    'expires',
    'from',
    'host',
    'if-match',
    'if-modified-since',
    'if-none-match',
    'if-range',
    'if-unmodified-since',
    'last-modified',
    'link',
    'location',
    'max-forwards',
    'proxy-authenticate',
    'proxy-authorization',
    'range',
    'referer',
    'refresh',
    'retry-after',
    'server',
    'set-cookie',
    'strict-transport-security',
    'transfer-encoding',
    'user-agent',
    'vary',
    'via',
    'www-authenticate',
  ].map((name): readonly [string, string] => [name, name === 'accept-encoding' ? 'gzip, deflate' : '']),
]

/** A decoded header block: each field's last value by name. */
export type HeaderFields = Record<string, string>

/** The decoding side of one connection (its dynamic table lives as long as the connection). */
export class HpackDecoder {
  /** Newest first. */
  private table: Array<readonly [string, string]> = []
  private size = 0
  private maxSize = 4_096
  private pos = 0
  private buf: Buffer = Buffer.alloc(0)

  /** Decodes one complete header block (HEADERS plus any CONTINUATION fragments). */
  decode(block: Buffer): HeaderFields {
    this.buf = block
    this.pos = 0
    const fields: HeaderFields = {}
    while (this.pos < block.length) {
      const first = block[this.pos] as number
      if (first & 0x80) {
        const [name, value] = this.entry(this.integer(7))
        fields[name] = value
      } else if (first & 0x40) {
        const [name, value] = this.literal(6)
        this.insert(name, value)
        fields[name] = value
      } else if (first & 0x20) {
        this.maxSize = this.integer(5)
        this.evict(0)
      } else {
        const [name, value] = this.literal(4) // without indexing, or never indexed: the same to a reader
        fields[name] = value
      }
    }
    return fields
  }

  private entry(index: number): readonly [string, string] {
    const found = index <= STATIC.length ? STATIC[index - 1] : this.table[index - STATIC.length - 1]
    if (index === 0 || found === undefined) throw new Error(`HPACK index ${index} out of range`)
    return found
  }

  private literal(prefix: number): [string, string] {
    const index = this.integer(prefix)
    const name = index === 0 ? this.string() : (this.entry(index)[0] as string)
    return [name, this.string()]
  }

  private integer(prefix: number): number {
    const max = (1 << prefix) - 1
    let value = (this.byte() as number) & max
    if (value < max) return value
    let shift = 0
    let b: number
    do {
      b = this.byte()
      value += (b & 0x7f) * 2 ** shift
      shift += 7
      if (shift > 28) throw new Error('HPACK integer too large')
    } while (b & 0x80)
    return value
  }

  private string(): string {
    const huffman = ((this.buf[this.pos] as number) & 0x80) !== 0
    const length = this.integer(7)
    const start = this.pos
    const end = start + length
    if (end > this.buf.length) throw new Error('HPACK string past the end of its block')
    this.pos = end
    return huffman ? huffmanDecode(this.buf, start, end) : this.buf.toString('latin1', start, end)
  }

  private byte(): number {
    if (this.pos >= this.buf.length) throw new Error('HPACK block ends inside a field')
    return this.buf[this.pos++] as number
  }

  private insert(name: string, value: string): void {
    const cost = 32 + name.length + value.length
    this.evict(cost)
    if (cost > this.maxSize) return // an entry larger than the table empties it and is not kept
    this.table.unshift([name, value])
    this.size += cost
  }

  /** Drops the oldest entries until `room` more octets fit. */
  private evict(room: number): void {
    while (this.size + room > this.maxSize && this.table.length > 0) {
      const [name, value] = this.table.pop() as readonly [string, string]
      this.size -= 32 + name.length + value.length
    }
  }
}

/** An HPACK integer with a `prefix`-bit prefix, its first byte or-ed with `flags`. */
function integer(value: number, prefix: number, flags: number): number[] {
  const max = (1 << prefix) - 1
  if (value < max) return [flags | value]
  const out = [flags | max]
  let rest = value - max
  while (rest >= 0x80) {
    out.push((rest & 0x7f) | 0x80)
    rest = Math.floor(rest / 0x80)
  }
  out.push(rest)
  return out
}

/** A field as a literal without indexing: by the static index of its name when it has one, else by name. */
function literal(name: string, value: string): Buffer {
  const index = STATIC.findIndex(([n]) => n === name) + 1
  const head = index > 0 ? integer(index, 4, 0) : [0, ...integer(name.length, 7, 0), ...Buffer.from(name, 'latin1')]
  return Buffer.from([...head, ...integer(Buffer.byteLength(value, 'latin1'), 7, 0), ...Buffer.from(value, 'latin1')])
}

/** Encodes `fields` (names in lower case) as one header block that adds nothing to either table. */
export function encodeHeaders(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  return Buffer.concat(
    fields.map(([name, value]) => {
      const exact = STATIC.findIndex(([n, v]) => n === name && v === value && v !== '') + 1
      return exact > 0 ? Buffer.from(integer(exact, 7, 0x80)) : literal(name, value)
    }),
  )
}
