/**
 * A loopback TCP proxy in front of one ZooKeeper server, for fault injection in tests:
 * - `blackhole()`: stop forwarding in both directions but keep the sockets open (a silent partition);
 * - `loseReplyToNextCreate()`: forward a create request, and when the server's reply to it arrives, drop
 *   that reply and cut the connection (the create succeeded on the server; the client never hears of it);
 * - `spaceFrames(ms)`: forward the server's frames one per write, `ms` apart, so that the client handles each in a
 *   turn of its own (events that arrive together would otherwise be handled in one).
 * It parses ZooKeeper's length-prefixed frames only to find the create's xid and its reply.
 */
import type { Socket } from 'node:net'
import { LoopbackProxy } from './loopback-proxy.js'

/** CREATE and CREATE2 (the backend sends CREATE2 where its client can: a create whose reply carries the stat). */
const OP_CREATES = new Set([1, 15])

/** Splits length-prefixed frames out of a stream; calls `onFrame` with each complete frame body. */
class Framer {
  private buffer = Buffer.alloc(0)
  constructor(private readonly onFrame: (frame: Buffer) => void) {}
  push(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk])
    while (this.buffer.length >= 4) {
      const size = this.buffer.readInt32BE(0)
      if (this.buffer.length < 4 + size) return
      this.onFrame(this.buffer.subarray(4, 4 + size))
      this.buffer = this.buffer.subarray(4 + size)
    }
  }
}

export class ZkProxy extends LoopbackProxy {
  /** Connections the proxy has accepted (the client reconnects through it after a cut). */
  accepted = 0
  /** Set once a create's reply was dropped: its xid. */
  droppedCreateXid: number | undefined
  private holes = false
  private armed = false
  private spacing: number | undefined
  private readonly pairs = new Set<[Socket, Socket]>()

  get url(): string {
    return `127.0.0.1:${this.port}`
  }

  /** Silently drops all traffic from now on (sockets stay open), until `heal()`. */
  blackhole(): void {
    this.holes = true
  }

  /** Forwards again; also closes the blackholed connections so the client reconnects. */
  heal(): void {
    this.holes = false
    this.cutAll()
  }

  loseReplyToNextCreate(): void {
    this.armed = true
  }

  /** On connections accepted from now on, forwards the server's frames one per write, `ms` apart. */
  spaceFrames(ms: number): void {
    this.spacing = ms
  }

  cutAll(): void {
    for (const [a, b] of this.pairs) {
      a.destroy()
      b.destroy()
    }
    this.pairs.clear()
  }

  async close(): Promise<void> {
    this.cutAll()
    await this.stopListening()
  }

  protected accept(client: Socket, upstream: Socket): void {
    this.accepted++
    const pair: [Socket, Socket] = [client, upstream]
    this.pairs.add(pair)
    let createXid: number | undefined
    let firstUp = true
    let firstDown = true
    const up = new Framer((frame) => {
      // The first frame is the ConnectRequest, which has no request header.
      if (firstUp) firstUp = false
      else if (this.armed && frame.length >= 8 && OP_CREATES.has(frame.readInt32BE(4))) createXid = frame.readInt32BE(0)
    })
    const spacing = this.spacing
    let queued: Buffer[] = []
    const forwardNext = (): void => {
      const next = queued.shift()
      if (next === undefined || client.destroyed) return
      client.write(next)
      if (queued.length > 0) setTimeout(forwardNext, spacing)
    }
    const down = new Framer((frame) => {
      if (spacing !== undefined) {
        const framed = Buffer.alloc(4 + frame.length)
        framed.writeInt32BE(frame.length, 0)
        frame.copy(framed, 4)
        queued.push(framed)
        if (queued.length === 1) setTimeout(forwardNext, spacing)
      }
      if (firstDown) firstDown = false
      else if (createXid !== undefined && frame.readInt32BE(0) === createXid) {
        this.armed = false
        this.droppedCreateXid = createXid
        createXid = undefined
        this.cut(pair)
      }
    })
    client.on('data', (chunk: Buffer) => {
      if (this.holes) return
      up.push(chunk)
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (this.holes) return
      down.push(chunk)
      // A chunk holding the dropped reply is not forwarded (the pair is already destroyed); spaced frames are queued.
      if (!client.destroyed && spacing === undefined) client.write(chunk)
    })
    const end = (): void => {
      queued = []
      this.cut(pair)
    }
    client.on('close', end)
    upstream.on('close', end)
    client.on('error', end)
    upstream.on('error', end)
  }

  private cut(pair: [Socket, Socket]): void {
    pair[0].destroy()
    pair[1].destroy()
    this.pairs.delete(pair)
  }
}
