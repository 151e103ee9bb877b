/**
 * Header blocks as HTTP/2 delivers them: a HEADERS frame, then CONTINUATION frames of the same stream until one
 * carries END_HEADERS (RFC 9113, 6.2 and 6.10). No other frame may come in between, since the HPACK table is
 * the connection's and a block must be decoded whole and in order.
 */
import * as F from './h2-frames.js'

/** A whole header block: its stream, whether the stream ends with it, and its HPACK bytes. */
export interface HeaderBlock {
  id: number
  endStream: boolean
  block: Buffer
}

/** Joins a HEADERS frame and its CONTINUATION frames into one {@link HeaderBlock}. */
export class HeaderBlocks {
  private open: { id: number; endStream: boolean; parts: Buffer[] } | undefined

  /** Throws when a frame of `type` would interrupt a block still waiting for its CONTINUATION. */
  check(type: number): void {
    if (this.open !== undefined && type !== F.CONTINUATION) throw new Error('a header block was interrupted')
  }

  /** A HEADERS frame (padding and priority stripped): the block when it is whole, else undefined. */
  headers(flags: number, id: number, payload: Buffer): HeaderBlock | undefined {
    const padding = flags & F.PADDED ? (payload[0] as number) : 0
    const start = (flags & F.PADDED ? 1 : 0) + (flags & F.PRIORITY ? 5 : 0)
    this.open = {
      id,
      endStream: (flags & F.END_STREAM) !== 0,
      parts: [payload.subarray(start, payload.length - padding)],
    }
    return flags & F.END_HEADERS ? this.close() : undefined
  }

  /** A CONTINUATION frame: the block when this was its last part, else undefined. */
  continuation(flags: number, id: number, payload: Buffer): HeaderBlock | undefined {
    if (this.open === undefined || this.open.id !== id) throw new Error('CONTINUATION without HEADERS')
    this.open.parts.push(payload)
    return flags & F.END_HEADERS ? this.close() : undefined
  }

  private close(): HeaderBlock {
    const { id, endStream, parts } = this.open as NonNullable<HeaderBlocks['open']>
    this.open = undefined
    return { id, endStream, block: parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts) }
  }
}
