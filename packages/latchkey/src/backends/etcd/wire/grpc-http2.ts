/**
 * gRPC over node:http2, just enough for etcd: unary calls with a deadline, and bidirectional streams (lease
 * keepalives, watches). One HTTP/2 session per client, on the first reachable endpoint; a session that fails or
 * closes is dropped and the next call connects again, to the next endpoint. The session holds the event loop
 * open only while a call or stream is in flight, as grpc-js does.
 */
import { EventEmitter } from 'node:events'
import http2 from 'node:http2'
import { ProtoReader } from './protobuf.js'

const STATUS_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
]
const UNAVAILABLE = 14
const DEADLINE_EXCEEDED = 4

/** A failed call: its gRPC status and etcd's message (`etcdserver: requested lease not found`). */
export class GrpcError extends Error {
  constructor(
    readonly code: number,
    details: string,
  ) {
    super(`${code} ${STATUS_NAMES[code] ?? 'UNKNOWN'}: ${details}`)
    this.name = 'GrpcError'
  }
}

/** Splits a byte stream into gRPC messages (etcd never compresses unless asked). */
class Frames {
  private pending: Buffer | undefined

  push(chunk: Buffer, onMessage: (message: ProtoReader) => void): void {
    let buf = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk])
    while (buf.length >= 5) {
      const end = 5 + buf.readUInt32BE(1)
      if (buf.length < end) break
      onMessage(new ProtoReader(buf, 5, end))
      buf = buf.subarray(end)
    }
    this.pending = buf.length === 0 ? undefined : buf
  }
}

const headersFor = (path: string, timeoutMs?: number): http2.OutgoingHttpHeaders => ({
  ':method': 'POST',
  ':path': path,
  'content-type': 'application/grpc',
  te: 'trailers',
  ...(timeoutMs === undefined ? {} : { 'grpc-timeout': `${Math.max(1, Math.ceil(timeoutMs))}m` }),
})

/** The status a response carries (in its trailers, or in its headers for a trailers-only response). */
function statusOf(headers: http2.IncomingHttpHeaders): { code: number; details: string } | undefined {
  const raw = headers['grpc-status']
  if (raw === undefined) return undefined
  const details = headers['grpc-message']
  return {
    code: Number(raw),
    details: typeof details === 'string' ? decodeURIComponent(details) : '',
  }
}

/** One client's connection to etcd. */
export class GrpcConnection {
  private session: http2.ClientHttp2Session | undefined
  private readonly inFlight = new Map<http2.ClientHttp2Session, number>()
  private next = 0
  private closed = false

  /** `hosts`: `http(s)://host:port` endpoints. */
  constructor(private readonly hosts: readonly string[]) {}

  private current(): http2.ClientHttp2Session {
    if (this.closed) throw new GrpcError(1, 'the etcd client was closed')
    const open = this.session
    if (open !== undefined && !open.closed && !open.destroyed) return open
    const host = this.hosts[this.next % this.hosts.length] as string
    const session = http2.connect(host)
    const forget = (): void => {
      if (this.session !== session) return
      this.session = undefined
      this.next++ // the next attempt tries the next endpoint
    }
    session.on('error', forget)
    session.on('goaway', forget)
    session.on('close', () => {
      forget()
      this.inFlight.delete(session)
    })
    session.unref()
    this.session = session
    return session
  }

  /** Counts a call on `session`: the first keeps the event loop alive until the last ends. */
  private hold(session: http2.ClientHttp2Session): () => void {
    const n = this.inFlight.get(session) ?? 0
    this.inFlight.set(session, n + 1)
    if (n === 0 && !session.destroyed) session.ref()
    let held = true
    return () => {
      if (!held) return
      held = false
      const left = (this.inFlight.get(session) ?? 1) - 1
      this.inFlight.set(session, left)
      if (left === 0 && !session.destroyed) session.unref()
    }
  }

  /** One unary call: `frame` (a framed request) to `path`, the response decoded by `decode`. */
  unary<T>(path: string, frame: Buffer, decode: (r: ProtoReader) => T, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let session: http2.ClientHttp2Session
      let stream: http2.ClientHttp2Stream
      try {
        session = this.current()
        stream = session.request(headersFor(path, timeoutMs))
      } catch (error) {
        reject(error instanceof GrpcError ? error : new GrpcError(UNAVAILABLE, (error as Error).message))
        return
      }
      const release = this.hold(session)
      let settled = false
      let status: { code: number; details: string } | undefined
      const chunks: Buffer[] = []
      const settle = (error: Error | undefined, value?: T): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        release()
        if (error === undefined) resolve(value as T)
        else {
          if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL)
          reject(error)
        }
      }
      const timer = setTimeout(() => {
        settle(new GrpcError(DEADLINE_EXCEEDED, `no answer within ${timeoutMs} ms`))
        this.moveOn(session)
      }, timeoutMs)
      stream.on('response', (headers) => {
        status ??= statusOf(headers)
      })
      stream.on('trailers', (headers) => {
        status = statusOf(headers) ?? status
      })
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('error', (error) => settle(new GrpcError(UNAVAILABLE, error.message)))
      stream.on('close', () => {
        if (status === undefined) {
          settle(new GrpcError(UNAVAILABLE, `stream closed without a status (code ${stream.rstCode})`))
          return
        }
        if (status.code !== 0) {
          settle(new GrpcError(status.code, status.details))
          return
        }
        const buf = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)
        if (buf.length < 5) {
          settle(new GrpcError(13, 'response without a message'))
          return
        }
        try {
          settle(undefined, decode(new ProtoReader(buf, 5, 5 + buf.readUInt32BE(1))))
        } catch (error) {
          settle(error as Error)
        }
      })
      stream.end(frame)
    })
  }

  /**
   * With several endpoints, a call that got no answer in time sends the next calls to the next endpoint (an
   * endpoint that accepts connections but never answers would otherwise keep every call); the session closes
   * once its calls in flight end. With one endpoint there is nowhere else to go, and the session stays.
   */
  private moveOn(session: http2.ClientHttp2Session): void {
    if (this.hosts.length < 2 || this.session !== session) return
    this.session = undefined
    this.next++
    session.close()
  }

  /** A bidirectional stream to `path`. */
  stream(path: string): GrpcStream {
    const session = this.current()
    const stream = session.request(headersFor(path))
    return new GrpcStream(stream, this.hold(session))
  }

  /** Ends every call and the session. */
  close(): void {
    this.closed = true
    this.session?.destroy()
    this.session = undefined
  }
}

/**
 * A bidirectional gRPC stream: `write` framed requests; 'message' (a reader per response), then exactly one of
 * 'end' (the server finished with status OK) or 'error'.
 */
export class GrpcStream extends EventEmitter {
  private finished = false

  constructor(
    private readonly stream: http2.ClientHttp2Stream,
    release: () => void,
  ) {
    super()
    const frames = new Frames()
    let status: { code: number; details: string } | undefined
    stream.on('response', (headers) => {
      status ??= statusOf(headers)
    })
    stream.on('trailers', (headers) => {
      status = statusOf(headers) ?? status
    })
    stream.on('data', (chunk: Buffer) => frames.push(chunk, (message) => this.emit('message', message)))
    stream.on('error', (error) => this.finish(new GrpcError(UNAVAILABLE, error.message)))
    stream.on('close', () => {
      release()
      if (status === undefined) this.finish(new GrpcError(UNAVAILABLE, `stream closed (code ${stream.rstCode})`))
      else if (status.code !== 0) this.finish(new GrpcError(status.code, status.details))
      else this.finish(undefined)
    })
  }

  private finish(error: Error | undefined): void {
    if (this.finished) return
    this.finished = true
    if (error === undefined) this.emit('end')
    else this.emit('error', error)
  }

  /** Sends one framed request (dropped once the stream has ended). */
  write(frame: Buffer): void {
    if (!this.finished && this.stream.writable) this.stream.write(frame)
  }

  /** Half-closes: the server ends the stream when it has answered what was sent. */
  end(): void {
    if (!this.stream.closed && this.stream.writable) this.stream.end()
  }

  /** Drops the stream at once. */
  cancel(): void {
    if (!this.stream.closed) this.stream.close(http2.constants.NGHTTP2_CANCEL)
  }
}
