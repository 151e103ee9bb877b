/**
 * An HTTP/2 client connection over a plain socket (TLS for `https:` endpoints), just what gRPC needs: streams
 * opened with a header block, DATA both ways with flow control, trailers, RST_STREAM, SETTINGS, PING, GOAWAY.
 *
 * Why not node:http2: on the bench machine one unary call through it cost 140-225 us of client CPU (an
 * Http2Stream is a full Duplex stream; headers go through objects and nghttp2 callbacks; a close is signalled a
 * tick later) where a raw TCP round trip costs 25 us; a contended etcd lock makes one call and reads about one
 * watch event per process per acquisition, so that was most of its client CPU. Here a call is one socket write
 * (HEADERS and DATA together) and its answer is read straight out of the socket's chunk.
 *
 * The session holds the event loop open only while a stream is open, as node:http2 with `unref` did.
 */
import type net from 'node:net'
import { ChurnMap } from '../../../backend/churn-map.js'
import * as F from './h2-frames.js'
import { type HeaderBlock, HeaderBlocks } from './h2-header-blocks.js'
import { connectH2Socket } from './h2-socket.js'
import { type H2Handler, H2Stream } from './h2-stream.js'
import { HpackDecoder } from './hpack.js'
import { PingAcks } from './ping-acks.js'

/** Our receive windows: big enough that a watch or a large range is not held back by round trips. */
const STREAM_WINDOW = 1 << 20
const CONNECTION_WINDOW = 1 << 24
/** Past this many stream ids, the session takes no new streams (ids are 31 bits; a new session starts over). */
const LAST_STREAM_ID = 2 ** 31 - 1

/** One HTTP/2 connection. `gone` runs once the session takes no new streams (GOAWAY, failure, close). */
export class H2Session {
  private readonly socket: net.Socket
  /** By id: a stream per unary call comes and goes (churn-map.ts says why not a Map). */
  private readonly streams = new ChurnMap<number, H2Stream>()
  private readonly decoder = new HpackDecoder()
  private nextId = 1
  private readonly reader = new F.FrameReader()
  private readonly blocks = new HeaderBlocks()
  private sendWindow = F.DEFAULT_WINDOW
  private peerStreamWindow = F.DEFAULT_WINDOW
  private maxFrame = F.DEFAULT_MAX_FRAME
  private unacked = 0
  private draining = false
  private dead = false
  private readonly acks: PingAcks

  constructor(
    endpoint: string,
    private readonly gone: (session: H2Session) => void,
  ) {
    this.socket = connectH2Socket(endpoint, (chunk) => this.reader.push(chunk, this.read))
    this.acks = new PingAcks((out) => {
      if (!this.dead) this.socket.write(out)
    })
    this.socket.on('error', (error) => this.fail(error))
    this.socket.on('close', () => this.fail(new Error('the connection to etcd closed')))
    this.socket.write(F.clientPreface(STREAM_WINDOW, CONNECTION_WINDOW))
  }

  /** Whether new streams can be opened here. */
  get usable(): boolean {
    return !this.dead && !this.draining
  }

  /** Opens a stream with the header block `headers` and first DATA `data` (`end`: the only DATA). */
  request(headers: Buffer, data: Buffer | undefined, end: boolean, handler: H2Handler): H2Stream {
    if (!this.usable) throw new Error('the connection to etcd is closing')
    if (headers.length > this.maxFrame) throw new Error('request headers larger than one frame')
    const stream = new H2Stream(this.nextId, handler, this.peerStreamWindow)
    this.nextId += 2
    if (this.nextId > LAST_STREAM_ID) this.drain()
    if (this.streams.size === 0) this.socket.ref()
    this.streams.set(stream.id, stream)
    const headersOnly = data === undefined && end
    const head = F.frame(F.HEADERS, F.END_HEADERS | (headersOnly ? F.END_STREAM : 0), stream.id, headers)
    if (headersOnly) stream.localEnded = true
    if (data === undefined || !this.fits(stream, data.length)) {
      this.send(head)
      if (data !== undefined || (end && !headersOnly)) this.write(stream, data ?? F.EMPTY, end)
      return stream
    }
    // The usual call: HEADERS and DATA in one write.
    const out = Buffer.allocUnsafe(head.length + F.HEADER_LENGTH + data.length)
    head.copy(out, 0)
    F.putFrameHeader(out, head.length, data.length, F.DATA, end ? F.END_STREAM : 0, stream.id)
    data.copy(out, head.length + F.HEADER_LENGTH)
    this.send(out)
    this.consume(stream, data.length, end)
    return stream
  }

  /** Sends `data` on `stream` (`end`: with END_STREAM), now or as the peer's windows open. */
  write(stream: H2Stream, data: Buffer, end: boolean): void {
    if (stream.localEnded || stream.endPending || this.streams.get(stream.id) !== stream) return
    if (stream.queued.length === 0 && this.fits(stream, data.length)) {
      this.send(F.frame(F.DATA, end ? F.END_STREAM : 0, stream.id, data))
      this.consume(stream, data.length, end)
      return
    }
    stream.queued.push(data)
    stream.endPending = end
    this.flush(stream)
  }

  /** Resets `stream` (RST_STREAM with `code`); its handler hears `closed(code)`. */
  reset(stream: H2Stream, code: number): void {
    if (this.streams.get(stream.id) !== stream) return
    if (!this.dead) this.send(F.frame32(F.RST_STREAM, stream.id, code))
    this.close(stream, code, undefined)
  }

  /** Takes no new streams; the connection ends once the open ones have. */
  drain(): void {
    if (this.draining) return
    this.draining = true
    this.gone(this)
    if (this.streams.size === 0) this.socket.end()
  }

  /** Ends every stream (with `error`) and the connection now. */
  destroy(error: Error = new Error('the etcd client was closed')): void {
    this.fail(error)
  }

  /** Writes `out`, with the PING ACKs waiting in front of it. */
  private send(out: Buffer): void {
    this.socket.write(this.acks.before(out))
  }

  private fits(stream: H2Stream, length: number): boolean {
    return length <= this.maxFrame && length <= this.sendWindow && length <= stream.sendWindow
  }

  private consume(stream: H2Stream, length: number, end: boolean): void {
    this.sendWindow -= length
    stream.sendWindow -= length
    if (end) {
      stream.localEnded = true
      this.closeIfDone(stream)
    }
  }

  /** Sends what the windows allow of `stream`'s queued DATA. */
  private flush(stream: H2Stream): void {
    while (stream.queued.length > 0) {
      const next = stream.queued[0] as Buffer
      const room = Math.min(this.maxFrame, this.sendWindow, stream.sendWindow)
      if (room <= 0 && next.length > 0) return
      const part = next.length <= room ? next : next.subarray(0, room)
      if (part === next) stream.queued.shift()
      else stream.queued[0] = next.subarray(room)
      const last = stream.queued.length === 0 && stream.endPending
      this.send(F.frame(F.DATA, last ? F.END_STREAM : 0, stream.id, part))
      this.consume(stream, part.length, last)
    }
  }

  /** One frame read; false once the connection failed (nothing more is read). */
  private readonly read: F.OnFrame = (type, flags, id, payload) => {
    if (this.dead) return false
    try {
      this.frame(type, flags, id, payload)
    } catch (error) {
      this.send(F.goawayFrame(F.PROTOCOL_ERROR))
      this.fail(error as Error)
      return false
    }
    return true
  }

  private frame(type: number, flags: number, id: number, payload: Buffer): void {
    this.blocks.check(type)
    if (type === F.DATA) this.onData(flags, id, payload)
    else if (type === F.HEADERS) this.onHeaderBlock(this.blocks.headers(flags, id, payload))
    else if (type === F.CONTINUATION) this.onHeaderBlock(this.blocks.continuation(flags, id, payload))
    else if (type === F.RST_STREAM) {
      const stream = this.streams.get(id)
      if (stream !== undefined) this.close(stream, payload.readUInt32BE(0), undefined)
    } else if (type === F.SETTINGS) {
      if (!(flags & F.ACK)) this.onSettings(payload)
    } else if (type === F.PING) {
      if (!(flags & F.ACK)) this.acks.add(payload)
    } else if (type === F.GOAWAY) this.onGoaway(payload.readUInt32BE(0) & 0x7fffffff)
    else if (type === F.WINDOW_UPDATE) this.onWindowUpdate(id, payload.readUInt32BE(0) & 0x7fffffff)
    else if (type === F.PUSH_PROMISE) throw new Error('etcd pushed a stream though push is disabled')
    // PRIORITY and unknown types are ignored (RFC 9113, 4.1).
  }

  private onData(flags: number, id: number, payload: Buffer): void {
    // Flow control counts the whole payload, padding included; the windows are returned as data arrives, in
    // steps of half a window, so that a long watch never stalls and a short answer costs no extra frame.
    this.unacked += payload.length
    if (this.unacked >= CONNECTION_WINDOW / 2) {
      this.send(F.frame32(F.WINDOW_UPDATE, 0, this.unacked))
      this.unacked = 0
    }
    const stream = this.streams.get(id)
    if (stream === undefined || stream.remoteEnded) return
    const endStream = (flags & F.END_STREAM) !== 0
    stream.unacked += payload.length
    if (!endStream && stream.unacked >= STREAM_WINDOW / 2) {
      this.send(F.frame32(F.WINDOW_UPDATE, id, stream.unacked))
      stream.unacked = 0
    }
    const data = flags & F.PADDED ? payload.subarray(1, payload.length - (payload[0] as number)) : payload
    if (endStream) stream.remoteEnded = true
    stream.handler.data(data, endStream)
    if (endStream) this.closeIfDone(stream)
  }

  private onHeaderBlock(whole: HeaderBlock | undefined): void {
    if (whole === undefined) return
    const { id, endStream, block } = whole
    // Decoded even for a stream already gone: the block may change the connection's HPACK table.
    const fields = this.decoder.decode(block)
    const stream = this.streams.get(id)
    if (stream === undefined || stream.remoteEnded) return
    if (endStream) stream.remoteEnded = true
    stream.handler.headers(fields, endStream)
    if (endStream) this.closeIfDone(stream)
  }

  private onSettings(payload: Buffer): void {
    for (const [setting, value] of F.readSettings(payload)) {
      if (setting === F.SETTINGS_INITIAL_WINDOW_SIZE) {
        const delta = value - this.peerStreamWindow
        this.peerStreamWindow = value
        for (const stream of this.streams.values()) stream.sendWindow += delta
      } else if (setting === F.SETTINGS_MAX_FRAME_SIZE) this.maxFrame = value
    }
    this.send(F.frame(F.SETTINGS, F.ACK, 0))
    for (const stream of this.streams.values()) this.flush(stream)
  }

  private onWindowUpdate(id: number, increment: number): void {
    if (id === 0) {
      this.sendWindow += increment
      for (const stream of this.streams.values()) this.flush(stream)
      return
    }
    const stream = this.streams.get(id)
    if (stream === undefined) return
    stream.sendWindow += increment
    this.flush(stream)
  }

  /**
   * The server stops: streams it will not process fail as refused; the others may still finish (whatever the
   * error code: the socket's end fails those it does not finish).
   */
  private onGoaway(lastId: number): void {
    // Draining first: a refused unary call is sent again at once, and must go to a new session, not this one.
    this.drain()
    for (const stream of this.streams.values()) {
      if (stream.id > lastId) this.close(stream, F.REFUSED_STREAM, undefined)
    }
  }

  private closeIfDone(stream: H2Stream): void {
    if (stream.localEnded && stream.remoteEnded) this.close(stream, undefined, undefined)
  }

  private close(stream: H2Stream, rstCode: number | undefined, error: Error | undefined): void {
    if (this.streams.get(stream.id) !== stream) return
    this.streams.delete(stream.id)
    if (this.streams.size === 0) {
      this.socket.unref()
      if (this.draining && !this.dead) this.socket.end()
    }
    stream.handler.closed(rstCode, error)
  }

  private fail(error: Error): void {
    if (this.dead) return
    this.dead = true
    this.acks.stop()
    this.socket.destroy()
    this.gone(this)
    for (const stream of this.streams.values()) this.close(stream, undefined, error)
  }
}
