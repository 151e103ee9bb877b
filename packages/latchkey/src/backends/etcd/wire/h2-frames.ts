/**
 * HTTP/2 frame layout (RFC 9113, section 4.1 and 6): the frame types, flags, settings and error codes the client
 * in `h2-session.ts` uses, the writers of a frame and the reader that cuts a byte stream into frames.
 */

export const DATA = 0x0
export const HEADERS = 0x1
export const RST_STREAM = 0x3
export const SETTINGS = 0x4
export const PUSH_PROMISE = 0x5
export const PING = 0x6
export const GOAWAY = 0x7
export const WINDOW_UPDATE = 0x8
export const CONTINUATION = 0x9

export const END_STREAM = 0x1
export const ACK = 0x1
export const END_HEADERS = 0x4
export const PADDED = 0x8
export const PRIORITY = 0x20

export const SETTINGS_HEADER_TABLE_SIZE = 0x1
export const SETTINGS_ENABLE_PUSH = 0x2
export const SETTINGS_INITIAL_WINDOW_SIZE = 0x4
export const SETTINGS_MAX_FRAME_SIZE = 0x5

export const NO_ERROR = 0x0
export const PROTOCOL_ERROR = 0x1
export const FLOW_CONTROL_ERROR = 0x3
export const REFUSED_STREAM = 0x7
export const CANCEL = 0x8

/** The window every stream and the connection start with, before any SETTINGS or WINDOW_UPDATE. */
export const DEFAULT_WINDOW = 65_535
/** The largest frame payload a peer must accept before it says otherwise. */
export const DEFAULT_MAX_FRAME = 16_384
export const HEADER_LENGTH = 9

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1')

/** Writes a frame header at `at` in `out`; the payload goes right after it. */
export function putFrameHeader(out: Buffer, at: number, length: number, type: number, flags: number, id: number): void {
  out[at] = (length >>> 16) & 0xff
  out[at + 1] = (length >>> 8) & 0xff
  out[at + 2] = length & 0xff
  out[at + 3] = type
  out[at + 4] = flags
  out.writeUInt32BE(id, at + 5)
}

/** One frame with `payload`. */
export function frame(type: number, flags: number, id: number, payload: Buffer = EMPTY): Buffer {
  const out = Buffer.allocUnsafe(HEADER_LENGTH + payload.length)
  putFrameHeader(out, 0, payload.length, type, flags, id)
  payload.copy(out, HEADER_LENGTH)
  return out
}

/** A frame whose payload is one 32-bit number (RST_STREAM's code, WINDOW_UPDATE's increment). */
export function frame32(type: number, id: number, value: number): Buffer {
  const out = Buffer.allocUnsafe(HEADER_LENGTH + 4)
  putFrameHeader(out, 0, 4, type, 0, id)
  out.writeUInt32BE(value, HEADER_LENGTH)
  return out
}

/** A SETTINGS frame of `[id, value]` pairs. */
export function settingsFrame(settings: ReadonlyArray<readonly [number, number]>): Buffer {
  const payload = Buffer.allocUnsafe(6 * settings.length)
  settings.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, 6 * i)
    payload.writeUInt32BE(value, 6 * i + 2)
  })
  return frame(SETTINGS, 0, 0, payload)
}

/** Each `[id, value]` pair of a SETTINGS payload, in order. */
export function readSettings(payload: Buffer): Array<[number, number]> {
  const settings: Array<[number, number]> = []
  for (let at = 0; at + 6 <= payload.length; at += 6)
    settings.push([payload.readUInt16BE(at), payload.readUInt32BE(at + 2)])
  return settings
}

/**
 * What a client sends first: the preface, its SETTINGS (no push, streams' receive window `streamWindow`) and the
 * connection's receive window raised to `connectionWindow`. Frames may follow at once: the server's SETTINGS need
 * not be awaited (RFC 9113, 3.4).
 */
export function clientPreface(streamWindow: number, connectionWindow: number): Buffer {
  return Buffer.concat([
    PREFACE,
    settingsFrame([
      [SETTINGS_ENABLE_PUSH, 0],
      [SETTINGS_INITIAL_WINDOW_SIZE, streamWindow],
    ]),
    frame32(WINDOW_UPDATE, 0, connectionWindow - DEFAULT_WINDOW),
  ])
}

export const EMPTY = Buffer.alloc(0)

/** GOAWAY with `code`; the last stream id is 0, as the client opens no streams for the server. */
export function goawayFrame(code: number): Buffer {
  const payload = Buffer.allocUnsafe(8)
  payload.writeUInt32BE(0, 0)
  payload.writeUInt32BE(code, 4)
  return frame(GOAWAY, 0, 0, payload)
}

/** What a {@link FrameReader} hands over for each whole frame; false stops the reading (the connection failed). */
export type OnFrame = (type: number, flags: number, id: number, payload: Buffer) => boolean

/** Cuts the chunks a socket delivers into frames, keeping a frame that is not whole yet for the next chunk. */
export class FrameReader {
  private pending: Buffer | undefined

  /** Hands every whole frame of what came so far to `onFrame`, in order, until it returns false. */
  push(chunk: Buffer, onFrame: OnFrame): void {
    let buf = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk])
    let at = 0
    while (buf.length - at >= HEADER_LENGTH) {
      const length = (buf[at] as number) * 65_536 + buf.readUInt16BE(at + 1)
      const end = at + HEADER_LENGTH + length
      if (end > buf.length) break
      const id = buf.readUInt32BE(at + 5) & 0x7fffffff
      if (!onFrame(buf[at + 3] as number, buf[at + 4] as number, id, buf.subarray(at + HEADER_LENGTH, end))) return
      at = end
    }
    buf = buf.subarray(at)
    this.pending = buf.length === 0 ? undefined : buf
  }
}
