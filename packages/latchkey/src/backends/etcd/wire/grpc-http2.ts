/**
 * gRPC over HTTP/2 (`h2-session.ts`), just enough for etcd: unary calls with a deadline, and bidirectional
 * streams (lease keepalives, watches). One HTTP/2 session per client, on the first reachable endpoint; a session
 * that fails or closes is dropped and the next call connects again, to the next endpoint. The session holds the
 * event loop open only while a call or stream is in flight, as grpc-js does.
 */
import { EventEmitter } from 'node:events'
import { CallDeadlines, type Deadline } from './call-deadlines.js'
import { CANCEL, REFUSED_STREAM } from './h2-frames.js'
import { H2Session } from './h2-session.js'
import type { H2Handler, H2Stream } from './h2-stream.js'
import { encodeHeaders, type HeaderFields } from './hpack.js'
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
    // A chunk is a view of the socket's read: a message cut in two is copied, not the chunk kept.
    while (buf.length >= 5) {
      const end = 5 + buf.readUInt32BE(1)
      if (buf.length < end) break
      onMessage(new ProtoReader(buf, 5, end))
      buf = buf.subarray(end)
    }
    this.pending = buf.length === 0 ? undefined : Buffer.from(buf)
  }
}

/** The header block of a call to `path` on `authority` (built once per path: no field changes between calls). */
function headerBlock(scheme: string, authority: string, path: string, timeoutMs?: number): Buffer {
  return encodeHeaders([
    [':method', 'POST'],
    [':scheme', scheme],
    [':path', path],
    [':authority', authority],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ...(timeoutMs === undefined ? [] : [['grpc-timeout', `${Math.max(1, Math.ceil(timeoutMs))}m`] as const]),
  ])
}

type Status = { code: number; details: string }

/** The status a response carries (in its trailers, or in its headers for a trailers-only response). */
function statusOf(headers: HeaderFields): Status | undefined {
  const raw = headers['grpc-status']
  if (raw === undefined) return undefined
  const details = headers['grpc-message']
  return { code: Number(raw), details: details === undefined ? '' : decodeURIComponent(details) }
}

/** One client's connection to etcd. */
export class GrpcConnection {
  private session: H2Session | undefined
  private next = 0
  private closed = false
  /** Header blocks by endpoint and path. */
  private readonly blocks = new Map<string, Buffer>()
  /** The deadlines of the unary calls in flight. */
  private readonly deadlines = new CallDeadlines()

  /** `hosts`: `http(s)://host:port` endpoints. */
  constructor(private readonly hosts: readonly string[]) {}

  private current(): { session: H2Session; host: string } {
    if (this.closed) throw new GrpcError(1, 'the etcd client was closed')
    const host = this.hosts[this.next % this.hosts.length] as string
    const open = this.session
    if (open?.usable) return { session: open, host }
    const session = new H2Session(host, () => {
      if (this.session !== session) return
      this.session = undefined
      this.next++ // the next attempt tries the next endpoint
    })
    this.session = session
    return { session, host }
  }

  private block(host: string, path: string, timeoutMs?: number): Buffer {
    const id = `${host} ${path} ${timeoutMs}`
    let block = this.blocks.get(id)
    if (block === undefined) {
      const url = new URL(host)
      block = headerBlock(url.protocol === 'https:' ? 'https' : 'http', url.host, path, timeoutMs)
      this.blocks.set(id, block)
    }
    return block
  }

  /** One unary call: `frame` (a framed request) to `path`, the response decoded by `decode`. */
  unary<T>(path: string, frame: Buffer, decode: (r: ProtoReader) => T, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call = new UnaryCall(this, path, frame, decode, resolve, reject, performance.now() + timeoutMs, timeoutMs)
      this.send(call)
      if (!call.settled) this.deadlines.add(call) // else the connection had already failed
    })
  }

  /** Sends `call` on the current session (a new one when the last is draining or gone). */
  send<T>(call: UnaryCall<T>): void {
    try {
      const at = this.current()
      call.session = at.session
      call.stream = at.session.request(this.block(at.host, call.path, call.timeoutMs), call.frame, true, call)
    } catch (error) {
      call.settle(error instanceof GrpcError ? error : new GrpcError(UNAVAILABLE, (error as Error).message))
    }
  }

  /**
   * With several endpoints, a call that got no answer in time sends the next calls to the next endpoint (an
   * endpoint that accepts connections but never answers would otherwise keep every call); the session closes
   * once its calls in flight end. With one endpoint there is nowhere else to go, and the session stays.
   */
  moveOn(session: H2Session): void {
    if (this.hosts.length < 2 || this.session !== session) return
    session.drain() // its `gone` moves this connection on to the next endpoint
  }

  /** A bidirectional stream to `path`. */
  stream(path: string): GrpcStream {
    const { session, host } = this.current()
    return new GrpcStream(session, this.block(host, path))
  }

  /** Ends every call and the session. */
  close(): void {
    this.closed = true
    this.deadlines.clear()
    const session = this.session
    this.session = undefined
    session?.destroy()
  }
}

/**
 * One unary call in flight: the handler of its stream and its deadline, in one object (a call used to be a dozen
 * closures and a timer of its own).
 */
class UnaryCall<T> implements H2Handler, Deadline {
  settled = false
  session: H2Session | undefined
  stream: H2Stream | undefined
  private status: Status | undefined
  private body: Buffer | undefined
  private resent = false

  constructor(
    private readonly connection: GrpcConnection,
    readonly path: string,
    /** The framed request, kept for one resend (each call encodes a buffer of its own). */
    readonly frame: Buffer,
    private readonly decode: (r: ProtoReader) => T,
    private readonly resolve: (value: T) => void,
    private readonly reject: (error: Error) => void,
    readonly dueAt: number,
    readonly timeoutMs: number,
  ) {}

  settle(error: Error | undefined, value?: T): void {
    if (this.settled) return
    this.settled = true
    this.body = undefined // the call may stay in the deadline queue a while: it keeps no response
    if (error === undefined) this.resolve(value as T)
    else this.reject(error)
  }

  expire(): void {
    this.settle(new GrpcError(DEADLINE_EXCEEDED, `no answer within ${this.timeoutMs} ms`))
    const { session, stream } = this
    if (session === undefined || stream === undefined) return
    session.reset(stream, CANCEL)
    this.connection.moveOn(session)
  }

  headers(fields: HeaderFields): void {
    this.status = statusOf(fields) ?? this.status
  }

  data(chunk: Buffer): void {
    this.body = this.body === undefined ? chunk : Buffer.concat([this.body, chunk])
  }

  closed(rstCode: number | undefined, error: Error | undefined): void {
    const { status, body } = this
    if (rstCode === REFUSED_STREAM && error === undefined && status === undefined && !this.resent && !this.settled) {
      // Refused, so never processed (a stream past a GOAWAY's last stream id, or reset as refused: RFC 9113 8.7):
      // sent again, once, on a new session, as gRPC clients do (a transparent retry), even a write. A call sent
      // just before the server's GOAWAY arrived failed so with "stream closed without a status (code 7)".
      this.resent = true
      this.connection.send(this)
      return
    }
    if (error !== undefined) this.settle(new GrpcError(UNAVAILABLE, error.message))
    else if (status === undefined) {
      this.settle(new GrpcError(UNAVAILABLE, `stream closed without a status (code ${rstCode ?? 0})`))
    } else if (status.code !== 0) this.settle(new GrpcError(status.code, status.details))
    else if (body === undefined || body.length < 5) this.settle(new GrpcError(13, 'response without a message'))
    else {
      try {
        this.settle(undefined, this.decode(new ProtoReader(body, 5, 5 + body.readUInt32BE(1))))
      } catch (e) {
        this.settle(e as Error)
      }
    }
  }
}

/**
 * A bidirectional gRPC stream: `write` framed requests; 'message' (a reader per response), then exactly one of
 * 'end' (the server finished with status OK) or 'error'.
 */
export class GrpcStream extends EventEmitter {
  private finished = false
  private readonly stream: H2Stream

  constructor(
    private readonly session: H2Session,
    headers: Buffer,
  ) {
    super()
    const frames = new Frames()
    let status: Status | undefined
    this.stream = session.request(headers, undefined, false, {
      headers: (fields) => {
        status = statusOf(fields) ?? status
      },
      data: (chunk) => frames.push(chunk, (message) => this.emit('message', message)),
      closed: (rstCode, error) => {
        if (error !== undefined) this.finish(new GrpcError(UNAVAILABLE, error.message))
        else if (status === undefined) this.finish(new GrpcError(UNAVAILABLE, `stream closed (code ${rstCode ?? 0})`))
        else if (status.code !== 0) this.finish(new GrpcError(status.code, status.details))
        else this.finish(undefined)
      },
    })
  }

  private finish(error: Error | undefined): void {
    if (this.finished) return
    this.finished = true
    // Listeners are attached after construction: a stream that failed at once reports it on the next tick.
    queueMicrotask(() => (error === undefined ? this.emit('end') : this.emit('error', error)))
  }

  /** Sends one framed request (dropped once the stream has ended). */
  write(frame: Buffer): void {
    if (!this.finished) this.session.write(this.stream, frame, false)
  }

  /** Half-closes: the server ends the stream when it has answered what was sent. */
  end(): void {
    if (!this.finished) this.session.write(this.stream, Buffer.alloc(0), true)
  }

  /** Drops the stream at once. */
  cancel(): void {
    this.session.reset(this.stream, CANCEL)
  }
}
