/**
 * The little of protocol buffers the etcd messages need: varints (int64 as decimal strings, as etcd3 returns
 * them, since lease ids pass 2^53), bools, bytes and nested messages. Hand-written because the generic path
 * (protobufjs through proto-loader, with `toObject` conversions) cost more client CPU per call than the call.
 */

const WIRE_VARINT = 0
const WIRE_LEN = 2
/** A positive decimal below 10^15, exact as a number. */
const SMALL_DECIMAL = /^[1-9][0-9]{0,14}$/

/** Encodes one message into a growing buffer; `frame()` prefixes the 5-byte gRPC message header. */
export class ProtoWriter {
  private buf: Buffer
  private pos: number

  /** `framed`: leave room for the gRPC header (compressed flag + length). */
  constructor(framed = false) {
    this.buf = Buffer.allocUnsafe(128)
    this.pos = framed ? 5 : 0
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n))
    this.buf.copy(grown, 0, 0, this.pos)
    this.buf = grown
  }

  private rawVarint(value: number): void {
    this.ensure(10)
    let v = value
    while (v > 0x7f) {
      this.buf[this.pos++] = (v % 0x80) | 0x80
      v = Math.floor(v / 0x80)
    }
    this.buf[this.pos++] = v
  }

  /** A 64-bit varint, its bits taken as two 32-bit halves: three BigInt operations instead of three per byte. */
  private rawVarintBig(value: bigint): void {
    this.ensure(10)
    const v = BigInt.asUintN(64, value)
    let lo = Number(v & 0xffffffffn)
    let hi = Number(v >> 32n)
    while (hi > 0 || lo > 0x7f) {
      this.buf[this.pos++] = (lo & 0x7f) | 0x80
      lo = ((lo >>> 7) | ((hi & 0x7f) << 25)) >>> 0
      hi >>>= 7
    }
    this.buf[this.pos++] = lo
  }

  private tag(field: number, wire: number): void {
    this.rawVarint(field * 8 + wire)
  }

  /** An int64 / uint64 / enum field given as a number, bigint or decimal string; omitted when zero. */
  int64(field: number, value: number | bigint | string | undefined): this {
    if (value === undefined || value === 0 || value === '0' || value === 0n || value === '') return this
    this.tag(field, WIRE_VARINT)
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) this.rawVarint(value)
    // Revisions as etcd3 gives them (decimal strings) fit a number: no BigInt on the way.
    else if (typeof value === 'string' && SMALL_DECIMAL.test(value)) this.rawVarint(Number(value))
    else this.rawVarintBig(BigInt(value))
    return this
  }

  /** `field = 0` written out: a oneof member or repeated enum element whose value is zero. */
  rawZero(field: number): this {
    this.tag(field, WIRE_VARINT)
    this.rawVarint(0)
    return this
  }

  /** A bool field; omitted when false. */
  bool(field: number, value: boolean | undefined): this {
    if (value !== true) return this
    this.tag(field, WIRE_VARINT)
    this.rawVarint(1)
    return this
  }

  /** A bytes field; omitted when absent. An empty buffer is written (etcd reads `key: ""` as given). */
  bytes(field: number, value: Uint8Array | undefined): this {
    if (value === undefined) return this
    this.tag(field, WIRE_LEN)
    this.rawVarint(value.length)
    this.ensure(value.length)
    this.buf.set(value, this.pos)
    this.pos += value.length
    return this
  }

  /**
   * A nested message field, written by `write` in place: one byte is kept for its length, and the body moves
   * up in the rare case its length needs more (a body of 128 bytes or more).
   */
  message(field: number, write: (w: ProtoWriter) => void): this {
    const at = this.begin(field)
    write(this)
    return this.end(at)
  }

  /**
   * Opens a nested message field (its body is what is written until {@link end} with the position returned): the
   * form of {@link message} without a closure, for the messages every call encodes.
   */
  begin(field: number): number {
    this.tag(field, WIRE_LEN)
    this.ensure(1)
    return this.pos++
  }

  /** Closes the nested message opened at `at` by {@link begin}. */
  end(at: number): this {
    const length = this.pos - at - 1
    if (length < 0x80) {
      this.buf[at] = length
      return this
    }
    let extra = 0
    for (let v = length; v >= 0x80; v = Math.floor(v / 0x80)) extra++
    this.ensure(extra)
    this.buf.copyWithin(at + 1 + extra, at + 1, this.pos)
    const end = this.pos + extra
    this.pos = at
    this.rawVarint(length)
    this.pos = end
    return this
  }

  /** The encoded message. */
  finish(): Buffer {
    return this.buf.subarray(0, this.pos)
  }

  /** The message with its gRPC header (the writer must have been created `framed`). */
  frame(): Buffer {
    this.buf[0] = 0
    this.buf.writeUInt32BE(this.pos - 5, 1)
    return this.buf.subarray(0, this.pos)
  }
}

/** Reads the fields of one message in order. */
export class ProtoReader {
  pos: number
  /** Field number and wire type of the field just read by `next()`. */
  field = 0
  wire = 0

  constructor(
    private readonly buf: Buffer,
    start = 0,
    private readonly end = buf.length,
  ) {
    this.pos = start
  }

  /** Advances to the next field; false at the end of the message. */
  next(): boolean {
    if (this.pos >= this.end) return false
    const key = this.varint()
    this.field = Math.floor(key / 8)
    this.wire = key % 8
    return true
  }

  /** A varint as a number (exact below 2^53, which every length, flag and enum is). */
  varint(): number {
    let result = 0
    let scale = 1
    for (;;) {
      const b = this.buf[this.pos++]
      if (b === undefined) throw new RangeError('truncated protobuf varint')
      result += (b & 0x7f) * scale
      if (b < 0x80) return result
      scale *= 0x80
    }
  }

  /** An int64 varint as a decimal string (negative values in two's complement, as int64 is encoded). */
  int64(): string {
    const start = this.pos
    let small = true
    for (let i = 0; ; i++) {
      const b = this.buf[start + i]
      if (b === undefined) throw new RangeError('truncated protobuf varint')
      if (i >= 7) small = false
      if (b < 0x80) break
    }
    if (small) return String(this.varint())
    // Eight bytes or more (lease ids, negative values): the 64 bits gathered as two 32-bit halves, so that three
    // BigInt operations make the value instead of three per byte (a line read decodes a lease id per key).
    let lo = 0
    let hi = 0
    for (let i = 0; i < 10; i++) {
      const b = this.buf[this.pos++] as number
      const bits = b & 0x7f
      if (i < 4) lo |= bits << (7 * i)
      else if (i === 4) {
        lo |= bits << 28 // its low 4 bits fill lo; the shift drops the rest
        hi = bits >>> 4
      } else hi |= bits << (7 * i - 32) // past bit 63 the shift drops the excess, as int64 does
      if (b < 0x80) break
    }
    return BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0)).toString()
  }

  bool(): boolean {
    return this.varint() !== 0
  }

  /** A bytes field, as a view of the frame (frames are never reused). */
  bytes(): Buffer {
    const n = this.varint()
    const out = this.buf.subarray(this.pos, this.pos + n)
    this.pos += n
    return out
  }

  /** A reader over the nested message at the current field. */
  nested(): ProtoReader {
    const n = this.varint()
    const r = new ProtoReader(this.buf, this.pos, this.pos + n)
    this.pos += n
    return r
  }

  /** Skips the current field. */
  skip(): void {
    if (this.wire === WIRE_VARINT) this.varint()
    else if (this.wire === WIRE_LEN) {
      const n = this.varint() // read first: `pos += varint()` would add to the position before the length
      this.pos += n
    } else if (this.wire === 1) this.pos += 8
    else if (this.wire === 5) this.pos += 4
    else throw new RangeError(`unsupported protobuf wire type ${this.wire}`)
  }
}
