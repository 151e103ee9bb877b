/**
 * The requests of a wire connection (zk-wire-connection.ts) between their asking and their answer: xids, the ones
 * asked while no socket is connected (sent on the next connect), the ones in flight in the order sent (the server
 * answers a session's requests in that order), and the hold that sends one turn's requests in one write while others
 * are in flight (backend/write-batches.ts). Each request is answered exactly once: by its reply, or with an error
 * code when its connection goes.
 */
import type { Socket } from 'node:net'
import { type HoldStep, turnHolds } from '../../../backend/write-batches.js'
import type { ZkErrorLike } from '../zk-client.js'
import { ZkWireError } from './zk-wire-error.js'

/** A request's answer: an error, or null and the reply frame with its body starting at `at`. */
export type OnReply = (error: ZkErrorLike | null, frame: Buffer, at: number) => void

/** A request: its frame, what it asks (for errors), and what to do with the reply. */
export interface Pending {
  readonly xid: number
  readonly frame: Buffer
  readonly op: string
  readonly path: string
  readonly onReply: OnReply
}

/** A reply's header: length, xid, zxid, err. */
const REPLY_HEADER = 4 + 16
const MARSHALLING_ERROR = -5

export class ZkPendingRequests {
  /** When the last request (or ping) was written: the connection pings after a third of the timeout without one. */
  lastSentAt = 0
  private xid = 1
  /** Written (or held for this turn's write), awaiting replies, in order. */
  private inFlight: Pending[] = []
  /** Asked while not connected: sent on (re)connect. */
  private parked: Pending[] = []
  private held: Buffer[] = []
  private readonly hold: (inFlight: number) => HoldStep = turnHolds(() => this.flush())

  /** @param socket the connected socket, if any */
  constructor(private readonly socket: () => Socket | undefined) {}

  /** A request of a new xid, its frame built for it. */
  create(build: (xid: number) => Buffer, op: string, path: string, onReply: OnReply): Pending {
    const xid = this.xid
    // Positive, wrapping to 1 after 2^31 - 1 as the Java client does (the server only echoes it).
    this.xid = xid >= 0x7fffffff ? 1 : xid + 1
    return { xid, frame: build(xid), op, path, onReply }
  }

  /** Writes `pending` on the connected socket now, or with the rest of this turn's requests. */
  write(pending: Pending): void {
    this.inFlight.push(pending)
    this.lastSentAt = performance.now()
    const step = this.hold(this.inFlight.length - 1)
    if (step === 'send') this.socket()?.write(pending.frame)
    else {
      if (step === 'full') this.flush()
      this.held.push(pending.frame)
    }
  }

  /** Keeps `pending` for the next connect. */
  park(pending: Pending): void {
    this.parked.push(pending)
  }

  /** Writes what was asked while not connected. */
  sendParked(): void {
    const parked = this.parked
    this.parked = []
    for (const pending of parked) this.write(pending)
  }

  /**
   * Answers the oldest request in flight with the reply `frame` (of `xid`, error code `err`); false when that is not
   * the request the reply answers, which means the stream is not what we think.
   */
  answer(frame: Buffer, xid: number, err: number): boolean {
    const pending = this.inFlight[0]
    if (pending === undefined || pending.xid !== xid) return false
    this.inFlight.shift()
    if (err !== 0) {
      this.fail(pending, err)
      return true
    }
    try {
      pending.onReply(null, frame, REPLY_HEADER)
    } catch (error) {
      // Each reply is decoded before its callback runs: a reply that does not decode is answered as such.
      if (error instanceof RangeError) this.fail(pending, MARSHALLING_ERROR)
      throw error
    }
    return true
  }

  /** Answers the requests in flight with `code` (their socket is gone: their outcome is unknown). */
  failInFlight(code: number): void {
    const inFlight = this.inFlight
    this.inFlight = []
    this.held = []
    for (const pending of inFlight) this.fail(pending, code)
  }

  /** Answers the requests kept for the next connect with `code`. */
  failParked(code: number): void {
    const parked = this.parked
    this.parked = []
    for (const pending of parked) this.fail(pending, code)
  }

  /** Answers `pending` with the error `code`. */
  fail(pending: Pending, code: number): void {
    pending.onReply(new ZkWireError(code, `${pending.op} ${pending.path}`), pending.frame, 0)
  }

  /** Writes the frames held this turn in one write. */
  private flush(): void {
    const held = this.held
    if (held.length === 0) return
    this.held = []
    this.socket()?.write(held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held))
  }
}
