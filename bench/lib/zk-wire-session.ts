/**
 * The least a Node process can spend on a ZooKeeper session: the wire protocol (jute frames over one socket) with
 * nothing around it, for the floor in zk-recipe-floor.ts. It opens one session, sends the five requests a lock
 * recipe needs (create, delete, getChildren, getData with a watch, close) with hand-encoded frames, matches replies
 * to requests by xid, batches the requests of one turn into one write as latchkey's clients do, delivers watch events
 * (xid -1) to one-shot listeners by path, and pings while idle. No reconnect, no retries, no chroot, no auth: a
 * bench floor, not a client (a lost connection fails every call).
 */
import net from 'node:net'
import { type HoldStep, turnHolds } from '../../packages/latchkey/src/backend/write-batches.js'

const OP = { create: 1, delete: 2, getData: 4, getChildren: 8, ping: 11, close: -11 } as const
const PING_XID = -2
const WATCH_XID = -1
/** Every permission for `world:anyone` (OPEN_ACL_UNSAFE), encoded once. */
const OPEN_ACL = (() => {
  const scheme = Buffer.from('world')
  const id = Buffer.from('anyone')
  const b = Buffer.alloc(4 + 4 + 4 + scheme.length + 4 + id.length)
  let at = b.writeInt32BE(1, 0)
  at = b.writeInt32BE(31, at)
  at = b.writeInt32BE(scheme.length, at)
  at += scheme.copy(b, at)
  at = b.writeInt32BE(id.length, at)
  id.copy(b, at)
  return b
})()

/** A reply's error code (KeeperException.Code), e.g. -101 no node, -110 node exists. */
export class ZkWireError extends Error {
  constructor(
    readonly code: number,
    what: string,
  ) {
    super(`${what}: ZooKeeper error ${code}`)
  }
}

type Reply = (err: number, body: Buffer) => void

export class ZkWireSession {
  private xid = 1
  private rest: Buffer | undefined
  private readonly replies = new Map<number, Reply>()
  private readonly watchers = new Map<string, (() => void)[]>()
  private lastSend = performance.now()
  private readonly pinger: NodeJS.Timeout
  private failed: Error | undefined
  /** Frames held until the end of this turn (see `batch`). */
  private held: Buffer[] = []
  private readonly hold: (inFlight: number) => HoldStep = turnHolds(() => this.flush())

  private constructor(
    private readonly socket: net.Socket,
    timeoutMs: number,
  ) {
    this.pinger = setInterval(() => {
      if (performance.now() - this.lastSend > timeoutMs / 3) this.write(PING_XID, OP.ping, Buffer.alloc(0))
    }, timeoutMs / 6)
    this.pinger.unref()
  }

  /** Connects to `host:port` and opens a session of `timeoutMs`. */
  static open(host: string, port: number, timeoutMs: number): Promise<ZkWireSession> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port })
      socket.setNoDelay()
      let session: ZkWireSession | undefined
      socket.once('error', reject)
      socket.on('connect', () => {
        // ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd (16 zero bytes), readOnly.
        const b = Buffer.alloc(4 + 4 + 8 + 4 + 8 + 4 + 16 + 1)
        b.writeInt32BE(b.length - 4, 0)
        b.writeInt32BE(timeoutMs, 16)
        b.writeInt32BE(16, 28)
        socket.write(b)
      })
      socket.on('data', (chunk) => {
        if (session === undefined) {
          // The ConnectResponse: taken as a whole (a few dozen bytes, one segment on loopback).
          session = new ZkWireSession(socket, timeoutMs)
          socket.removeListener('error', reject)
          socket.on('error', (error) => session?.fail(error))
          socket.on('close', () => session?.fail(new Error('ZooKeeper connection closed')))
          const length = chunk.readInt32BE(0)
          if (chunk.length > 4 + length) session.read(chunk.subarray(4 + length))
          resolve(session)
          return
        }
        session.read(chunk)
      })
    })
  }

  /** Creates `path` (mode: 0 persistent, 3 ephemeral sequential); resolves the created path. */
  async create(path: string, data: Buffer, mode: number): Promise<string> {
    const p = Buffer.from(path)
    const body = Buffer.alloc(4 + p.length + 4 + data.length + OPEN_ACL.length + 4)
    let at = body.writeInt32BE(p.length, 0)
    at += p.copy(body, at)
    at = body.writeInt32BE(data.length, at)
    at += data.copy(body, at)
    at += OPEN_ACL.copy(body, at)
    body.writeInt32BE(mode, at)
    const reply = await this.call(OP.create, body, 'create')
    return reply.toString('utf8', 4, 4 + reply.readInt32BE(0))
  }

  async delete(path: string): Promise<void> {
    const body = pathBody(path, 4)
    body.writeInt32BE(-1, body.length - 4)
    await this.call(OP.delete, body, 'delete')
  }

  async getChildren(path: string): Promise<string[]> {
    const reply = await this.call(OP.getChildren, pathBody(path, 1), 'getChildren')
    const count = reply.readInt32BE(0)
    const children: string[] = []
    let at = 4
    for (let i = 0; i < count; i++) {
      const length = reply.readInt32BE(at)
      children.push(reply.toString('utf8', at + 4, at + 4 + length))
      at += 4 + length
    }
    return children
  }

  /** Sets a data watch on `path`; `onEvent` runs once at its next change or deletion. Rejects (-101) if absent. */
  async watch(path: string, onEvent: () => void): Promise<void> {
    const listeners = this.watchers.get(path) ?? []
    listeners.push(onEvent)
    this.watchers.set(path, listeners)
    const body = pathBody(path, 1)
    body.writeUInt8(1, body.length - 1)
    try {
      await this.call(OP.getData, body, 'getData')
    } catch (error) {
      const left = (this.watchers.get(path) ?? []).filter((l) => l !== onEvent)
      if (left.length === 0) this.watchers.delete(path)
      else this.watchers.set(path, left)
      throw error
    }
  }

  /** Closes the session (its ephemeral nodes go at once) and the socket. */
  async close(): Promise<void> {
    clearInterval(this.pinger)
    await this.call(OP.close, Buffer.alloc(0), 'close').catch(() => undefined)
    this.socket.destroy()
  }

  private call(type: number, body: Buffer, what: string): Promise<Buffer> {
    if (this.failed !== undefined) return Promise.reject(this.failed)
    return new Promise((resolve, reject) => {
      const xid = this.xid++
      // Written first, so `replies` counts only the requests before it (no reply can come in between).
      this.write(xid, type, body)
      this.replies.set(xid, (err, reply) => (err === 0 ? resolve(reply) : reject(new ZkWireError(err, what))))
    })
  }

  private write(xid: number, type: number, body: Buffer): void {
    const frame = Buffer.allocUnsafe(12 + body.length)
    frame.writeInt32BE(8 + body.length, 0)
    frame.writeInt32BE(xid, 4)
    frame.writeInt32BE(type, 8)
    body.copy(frame, 12)
    this.lastSend = performance.now()
    this.batch(frame)
  }

  /**
   * Writes `frame` now when nothing is in flight, else holds it to the end of this turn of the event loop with the
   * others sent in it, a bounded batch per write: latchkey's rule for its clients (`turnHolds`), which Curator's NIO
   * sender gets by its selector loop. Without it, 50 concurrent loops cost a system call per request, and the floor
   * would be no floor at high concurrency.
   */
  private batch(frame: Buffer): void {
    const step = this.hold(this.replies.size)
    if (step === 'send') this.socket.write(frame)
    else {
      if (step === 'full') this.flush()
      this.held.push(frame)
    }
  }

  /** Writes the held frames in one write. */
  private flush(): void {
    const held = this.held
    this.held = []
    if (held.length > 0) this.socket.write(held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held))
  }

  private read(chunk: Buffer): void {
    const buffer = this.rest === undefined ? chunk : Buffer.concat([this.rest, chunk])
    this.rest = undefined
    let at = 0
    while (buffer.length - at >= 4) {
      const end = at + 4 + buffer.readInt32BE(at)
      if (end > buffer.length) break
      // Reply header: xid, zxid, err; then the body.
      const xid = buffer.readInt32BE(at + 4)
      const err = buffer.readInt32BE(at + 16)
      const body = buffer.subarray(at + 20, end)
      at = end
      if (xid === WATCH_XID) this.event(body)
      else if (xid !== PING_XID) {
        const reply = this.replies.get(xid)
        this.replies.delete(xid)
        reply?.(err, body)
      }
    }
    if (at < buffer.length) this.rest = buffer.subarray(at)
  }

  /** A WatcherEvent: type, state, path. Every listener of the path runs once (ZooKeeper's watches are one-shot). */
  private event(body: Buffer): void {
    const length = body.readInt32BE(8)
    const path = body.toString('utf8', 12, 12 + length)
    const listeners = this.watchers.get(path)
    this.watchers.delete(path)
    for (const listener of listeners ?? []) listener()
  }

  private fail(error: Error): void {
    if (this.failed !== undefined) return
    this.failed = error
    clearInterval(this.pinger)
    for (const reply of this.replies.values()) reply(-4, Buffer.alloc(0)) // CONNECTIONLOSS
    this.replies.clear()
  }
}

/** A request body that starts with `path` and has `extra` zeroed bytes after it. */
function pathBody(path: string, extra: number): Buffer {
  const p = Buffer.from(path)
  const body = Buffer.alloc(4 + p.length + extra)
  body.writeInt32BE(p.length, 0)
  p.copy(body, 4)
  return body
}
