/**
 * latchkey's own ZooKeeper client: one session over one socket at a time, the requests a lock needs (with CREATE2),
 * and nothing else. It replaced node-zookeeper-client for the sessions the backend opens itself: that client was an
 * eighth of a waiting process's CPU in the 10-waiter profile (a record object walked field by field per request and
 * reply, a retry loop per request, a stream pipeline per read), and latchkey already replaced its reads, its writes,
 * its reply decoders and its CREATE from outside. A client handed in by the user is still used as it is.
 *
 * What it does, as ZooKeeper's Java client does:
 * - connects to the servers in a random order and moves to the next one when a socket closes, a connect takes
 *   longer than the session timeout over the number of servers, or nothing is heard for 2/3 of the session
 *   timeout; the session (id and password) goes along, and a server that no longer knows it answers with a timeout
 *   of 0: the session expired ('expired', and every later call fails);
 * - on each reconnect, sets again the watches it holds (SetWatches from the last zxid seen), then sends what was
 *   asked while disconnected; requests in flight when a socket closed fail with CONNECTION_LOSS (their outcome is
 *   unknown: the backend recovers a create by its protected name);
 * - pings after a third of the session timeout without a request;
 * - answers requests in the order sent (the server does, per session), and holds the requests of one turn of the
 *   event loop for one write while others are in flight (backend/write-batches.ts).
 * No chroot (the backend folds it into its root), no auth, no read-only mode.
 */
import { EventEmitter } from 'node:events'
import net from 'node:net'
import { readIntoSlabs } from '../../../backend/read-slabs.js'
import { parseHostList } from '../../../backend/url-parts.js'
import { type HoldStep, turnHolds } from '../../../backend/write-batches.js'
import type { ZkClient, ZkErrorLike, ZkEvent, ZkStat, ZkTransaction } from '../zk-client.js'
import { ZkFrames } from '../zk-frames.js'
import { OP, XID } from './zk-jute.js'
import {
  closeFrame,
  createFrame,
  deleteFrame,
  type MultiOp,
  multiFrame,
  pingFrame,
  readChildren,
  readCreated,
  readCreated2,
  readData,
  readFrame,
  readMulti,
  readStat,
  setDataFrame,
  setWatchesFrame,
} from './zk-requests.js'
import { ZkWatches } from './zk-watches.js'
import { ZkWireError } from './zk-wire-error.js'

type Watcher = (event: ZkEvent) => void
type Err = ZkErrorLike | null
/** A request: its frame, what it asks (for errors), and what to do with the reply (the body starts at `at`). */
interface Pending {
  readonly xid: number
  readonly frame: Buffer
  readonly op: string
  readonly path: string
  readonly onReply: (error: Err, frame: Buffer, at: number) => void
}

const CONNECTION_LOSS = -4
const NO_NODE = -101
const SESSION_EXPIRED = -112
const MARSHALLING_ERROR = -5
/** A reply's header: xid, zxid, err. */
const REPLY_HEADER = 4 + 16
/** Wait before dialling again once every server was tried. */
const RETRY_MS = 100

type Phase = 'idle' | 'connecting' | 'connected' | 'closing' | 'closed' | 'expired'

export class ZkWireClient extends EventEmitter implements ZkClient {
  /** `h1:2181,h2:2181`: what errors name. */
  readonly servers: string
  private readonly hosts: { host: string; port: number }[]
  private nextHost = 0
  private phase: Phase = 'idle'
  private socket: net.Socket | undefined
  private sessionId = Buffer.alloc(8)
  private passwd = Buffer.alloc(16)
  private negotiatedMs = 0
  /** The last zxid seen, as two int32 halves (a Buffer only when a reconnect sends it). */
  private zxidHigh = 0
  private zxidLow = 0
  private xid = 1
  /** Written (or held for this turn's write), awaiting replies, in order. */
  private inFlight: Pending[] = []
  /** Asked while not connected: sent on (re)connect. */
  private unsent: Pending[] = []
  private held: Buffer[] = []
  private readonly hold: (inFlight: number) => HoldStep = turnHolds(() => this.flush())
  private readonly watches = new ZkWatches()
  private lastSentAt = 0
  private lastHeardAt = 0
  private timer: NodeJS.Timeout | undefined

  constructor(
    connectString: string,
    private readonly sessionTimeoutMs: number,
  ) {
    super()
    this.servers = connectString
    this.hosts = parseHostList(connectString, 2181, connectString).map((h) => ({ host: h.host, port: h.port }))
    for (let i = this.hosts.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1))
      ;[this.hosts[i], this.hosts[j]] = [
        this.hosts[j] as (typeof this.hosts)[0],
        this.hosts[i] as (typeof this.hosts)[0],
      ]
    }
  }

  connect(): void {
    if (this.phase !== 'idle') return
    this.phase = 'connecting'
    this.dial()
  }

  /** The session's id (8 bytes; zeros before the first connect), as node-zookeeper-client gives it. */
  getSessionId(): Buffer {
    return Buffer.from(this.sessionId)
  }

  /** The session's password (16 bytes), which resumes it from another connection (node-zookeeper-client's name). */
  getSessionPassword(): Buffer {
    return Buffer.from(this.passwd)
  }

  getSessionTimeout(): number {
    return this.negotiatedMs
  }

  getState(): { name: string } {
    const names: Record<Phase, string> = {
      idle: 'DISCONNECTED',
      connecting: 'DISCONNECTED',
      connected: 'SYNC_CONNECTED',
      closing: 'DISCONNECTED',
      closed: 'DISCONNECTED',
      expired: 'EXPIRED',
    }
    return { name: names[this.phase] }
  }

  create(path: string, data: Buffer, mode: number, callback: (error: Err, path: string) => void): void {
    this.send(
      (xid) => createFrame(xid, OP.create, path, data, mode),
      'create',
      path,
      (e, f, at) => callback(e, e === null ? readCreated(f, at) : ''),
    )
  }

  /** CREATE2 (3.5+): the created path and the new node's stat in one reply. */
  create2(
    path: string,
    data: Buffer,
    mode: number,
    callback: (error: Err, result: { path: string; stat: ZkStat }) => void,
  ): void {
    this.send(
      (xid) => createFrame(xid, OP.create2, path, data, mode),
      'create2',
      path,
      (e, f, at) => callback(e, e === null ? readCreated2(f, at) : (undefined as never)),
    )
  }

  remove(path: string, version: number, callback: (error: Err) => void): void {
    this.send(
      (xid) => deleteFrame(xid, path, version),
      'delete',
      path,
      (e) => callback(e),
    )
  }

  /** The node's stat, null when it does not exist (as node-zookeeper-client answers). */
  exists(path: string, callback: (error: Err, stat: ZkStat) => void): void {
    this.send(
      (xid) => readFrame(xid, OP.exists, path, false),
      'exists',
      path,
      (e, f, at) => {
        if (e?.code === NO_NODE) callback(null, null as unknown as ZkStat)
        else callback(e, e === null ? readStat(f, at) : (undefined as never))
      },
    )
  }

  getChildren(path: string, callback: (error: Err, children: string[]) => void): void
  getChildren(path: string, watcher: Watcher, callback: (error: Err, children: string[]) => void): void
  getChildren(path: string, a: Watcher | ((e: Err, c: string[]) => void), b?: (e: Err, c: string[]) => void): void {
    const watcher = b === undefined ? undefined : (a as Watcher)
    const callback = (b ?? a) as (e: Err, c: string[]) => void
    this.send(
      (xid) => readFrame(xid, OP.getChildren, path, watcher !== undefined),
      'getChildren',
      path,
      (e, f, at) => {
        if (e !== null) return callback(e, [])
        if (watcher !== undefined) this.watches.add('child', path, watcher)
        callback(null, readChildren(f, at))
      },
    )
  }

  getData(path: string, callback: (error: Err, data: Buffer, stat: ZkStat) => void): void
  getData(path: string, watcher: Watcher, callback: (error: Err, data: Buffer, stat: ZkStat) => void): void
  getData(
    path: string,
    a: Watcher | ((e: Err, d: Buffer, s: ZkStat) => void),
    b?: (e: Err, d: Buffer, s: ZkStat) => void,
  ): void {
    const watcher = b === undefined ? undefined : (a as Watcher)
    const callback = (b ?? a) as (e: Err, d: Buffer, s: ZkStat) => void
    this.send(
      (xid) => readFrame(xid, OP.getData, path, watcher !== undefined),
      'getData',
      path,
      (e, f, at) => {
        if (e !== null) return callback(e, Buffer.alloc(0), undefined as never)
        if (watcher !== undefined) this.watches.add('data', path, watcher)
        const { data, stat } = readData(f, at)
        callback(null, data, stat)
      },
    )
  }

  setData(path: string, data: Buffer | null, version: number, callback: (error: Err, stat: ZkStat) => void): void {
    this.send(
      (xid) => setDataFrame(xid, path, data, version),
      'setData',
      path,
      (e, f, at) => callback(e, e === null ? readStat(f, at) : (undefined as never)),
    )
  }

  transaction(): ZkTransaction {
    const ops: MultiOp[] = []
    const tx: ZkTransaction = {
      create: (path, data, mode) => {
        ops.push({ op: 'create', path, data, mode })
        return tx
      },
      setData: (path, data, version) => {
        ops.push({ op: 'setData', path, data, version })
        return tx
      },
      commit: (callback) =>
        this.send(
          (xid) => multiFrame(xid, ops),
          'multi',
          ops.map((o) => `${o.op} ${o.path}`).join(', '),
          (e, f, at) => {
            if (e !== null) return callback(e, [])
            const { results, err } = readMulti(f, at)
            callback(err === 0 ? null : new ZkWireError(err, 'multi'), results)
          },
        ),
    }
    return tx
  }

  /** Ends the session (the server deletes its ephemeral nodes at once); 'disconnected' once the socket is gone. */
  close(): void {
    if (this.phase === 'closing' || this.phase === 'closed') return
    const wasConnected = this.phase === 'connected'
    this.phase = 'closing'
    this.stopTimer()
    this.failAll(this.unsent)
    this.unsent = []
    const socket = this.socket
    if (!wasConnected || socket === undefined) {
      this.destroy()
      return
    }
    const xid = this.nextXid()
    this.write({ xid, frame: closeFrame(xid), op: 'closeSession', path: '', onReply: () => socket.destroy() })
    // Nothing answers on a silent partition: the socket goes after the read timeout anyway (it keeps the process up).
    const timer = setTimeout(() => socket.destroy(), Math.max(1, (this.negotiatedMs * 2) / 3))
    timer.unref()
  }

  /** Drops the socket now, without ending the session (close() does, when the server answers). */
  destroy(): void {
    if (this.phase === 'closed') return
    const socket = this.socket
    if (this.phase !== 'expired') this.phase = 'closing'
    this.stopTimer()
    if (socket === undefined) this.finishClose()
    else socket.destroy()
  }

  /** Queues a request: written now when connected (or held for this turn's write), else at the next connect. */
  private send(
    build: (xid: number) => Buffer,
    op: string,
    path: string,
    onReply: (error: Err, frame: Buffer, at: number) => void,
  ): void {
    const xid = this.nextXid()
    const pending: Pending = { xid, frame: build(xid), op, path, onReply }
    if (this.phase === 'connected') this.write(pending)
    else if (this.phase === 'connecting' || this.phase === 'idle') this.unsent.push(pending)
    else queueMicrotask(() => this.fail(pending, this.phase === 'expired' ? SESSION_EXPIRED : CONNECTION_LOSS))
  }

  /** The next xid: positive, wrapping to 1 after 2^31 - 1 as the Java client does (the server only echoes it). */
  private nextXid(): number {
    const xid = this.xid
    this.xid = xid >= 0x7fffffff ? 1 : xid + 1
    return xid
  }

  /** Answers `pending` with the error `code`. */
  private fail(pending: Pending, code: number): void {
    pending.onReply(new ZkWireError(code, `${pending.op} ${pending.path}`), pending.frame, 0)
  }

  private write(pending: Pending): void {
    this.inFlight.push(pending)
    this.lastSentAt = performance.now()
    const step = this.hold(this.inFlight.length - 1)
    if (step === 'send') this.socket?.write(pending.frame)
    else {
      if (step === 'full') this.flush()
      this.held.push(pending.frame)
    }
  }

  /** Writes the frames held this turn in one write. */
  private flush(): void {
    const held = this.held
    if (held.length === 0) return
    this.held = []
    this.socket?.write(held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held))
  }

  private dial(): void {
    const target = this.hosts[this.nextHost % this.hosts.length] as { host: string; port: number }
    this.nextHost++
    let handshaken = false
    const frames = new ZkFrames(
      (frame) => {
        if (handshaken) this.onFrame(frame)
        else {
          handshaken = true
          this.onConnected(frame, socket)
        }
      },
      () => socket.destroy(),
    )
    const socket = net.connect({
      host: target.host,
      port: target.port,
      onread: readIntoSlabs((chunk) => frames.push(chunk, () => socket.destroyed)),
    })
    this.socket = socket
    socket.setNoDelay()
    socket.on('connect', () => socket.write(this.connectRequest()))
    socket.on('error', () => undefined) // 'close' follows, which moves on
    socket.on('close', () => this.onClose(socket))
    this.lastHeardAt = performance.now()
    this.startTimer()
  }

  /** ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd, readOnly. */
  private connectRequest(): Buffer {
    const b = Buffer.alloc(4 + 4 + 8 + 4 + 8 + 4 + 16 + 1)
    b.writeInt32BE(b.length - 4, 0)
    b.writeInt32BE(this.zxidHigh, 8)
    b.writeInt32BE(this.zxidLow, 12)
    b.writeInt32BE(this.sessionTimeoutMs, 16)
    this.sessionId.copy(b, 20)
    b.writeInt32BE(16, 28)
    this.passwd.copy(b, 32, 0, 16)
    return b
  }

  /** ConnectResponse: protocolVersion, timeOut, sessionId, passwd (a timeOut of 0: the session expired). */
  private onConnected(frame: Buffer, socket: net.Socket): void {
    const timeOut = frame.readInt32BE(8)
    if (timeOut <= 0) {
      this.phase = 'expired'
      socket.destroy()
      this.emit('expired')
      return
    }
    const first = this.negotiatedMs === 0
    this.negotiatedMs = timeOut
    frame.copy(this.sessionId, 0, 12, 20)
    const passwdLength = frame.readInt32BE(20)
    this.passwd = Buffer.from(frame.subarray(24, 24 + passwdLength))
    this.phase = 'connected'
    this.lastHeardAt = performance.now()
    this.startTimer()
    const watched = first ? undefined : this.watches.paths()
    if (watched !== undefined) socket.write(setWatchesFrame(this.lastZxid(), watched.data, [], watched.child))
    const unsent = this.unsent
    this.unsent = []
    for (const pending of unsent) this.write(pending)
    this.emit('connected')
  }

  private lastZxid(): Buffer {
    const b = Buffer.alloc(8)
    b.writeInt32BE(this.zxidHigh, 0)
    b.writeInt32BE(this.zxidLow, 4)
    return b
  }

  private onFrame(frame: Buffer): void {
    try {
      this.dispatch(frame)
    } catch (error) {
      // A frame too short for what it should hold: the stream is not what we think; start over on a new connection.
      if (!(error instanceof RangeError)) throw error
      this.socket?.destroy()
    }
  }

  private dispatch(frame: Buffer): void {
    this.lastHeardAt = performance.now()
    const xid = frame.readInt32BE(4)
    if (xid === XID.watchEvent) {
      // WatcherEvent: type, state, path. Type -1 is a session state change, which the socket tells us already.
      const type = frame.readInt32BE(REPLY_HEADER)
      if (type !== -1) this.watches.fire(type, frame.toString('utf8', REPLY_HEADER + 12, frame.length))
      return
    }
    if (xid === XID.ping || xid === XID.setWatches || xid < 0) return
    const pending = this.inFlight.shift()
    if (pending === undefined || pending.xid !== xid) {
      // Replies come in the order of the requests; anything else means the stream is not what we think.
      if (pending !== undefined) this.inFlight.unshift(pending)
      this.socket?.destroy()
      return
    }
    // The reply's zxid: the server's last one, kept when positive (-1 on some replies, 0 on others), as Java does.
    const zxidHigh = frame.readInt32BE(8)
    const zxidLow = frame.readInt32BE(12)
    if (zxidHigh > 0 || (zxidHigh === 0 && zxidLow !== 0)) {
      this.zxidHigh = zxidHigh
      this.zxidLow = zxidLow
    }
    const err = frame.readInt32BE(16)
    if (err !== 0) {
      this.fail(pending, err)
      return
    }
    try {
      pending.onReply(null, frame, REPLY_HEADER)
    } catch (error) {
      // Each reply is decoded before its callback runs: a reply that does not decode is answered as such.
      if (error instanceof RangeError) this.fail(pending, MARSHALLING_ERROR)
      throw error
    }
  }

  private onClose(socket: net.Socket): void {
    if (socket !== this.socket) return
    this.socket = undefined
    this.held = []
    const inFlight = this.inFlight
    this.inFlight = []
    this.failAll(inFlight)
    if (this.phase === 'closing' || this.phase === 'closed') {
      this.finishClose()
      return
    }
    if (this.phase === 'expired') {
      this.stopTimer()
      for (const pending of this.unsent) this.fail(pending, SESSION_EXPIRED)
      this.unsent = []
      return
    }
    const wasConnected = this.phase === 'connected'
    this.phase = 'connecting'
    if (wasConnected) this.emit('disconnected')
    // Another server at once; after a round of them, a pause (a server that refuses is not dialled in a loop).
    const delay = this.nextHost % this.hosts.length === 0 && !wasConnected ? RETRY_MS : 0
    this.stopTimer()
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (this.phase === 'connecting') this.dial()
    }, delay)
  }

  private finishClose(): void {
    if (this.phase === 'closed') return
    this.phase = 'closed'
    this.stopTimer()
    this.failAll(this.unsent)
    this.unsent = []
    this.emit('disconnected')
  }

  private failAll(pendings: readonly Pending[]): void {
    for (const pending of pendings) this.fail(pending, CONNECTION_LOSS)
  }

  /** Pings when idle, and gives up on a server that says nothing (connecting or connected). */
  private startTimer(): void {
    this.stopTimer()
    const timeoutMs = this.negotiatedMs || this.sessionTimeoutMs
    const every = Math.max(10, Math.floor(timeoutMs / 10))
    this.timer = setInterval(() => this.tick(), every)
    this.timer.unref()
  }

  private tick(): void {
    const now = performance.now()
    const socket = this.socket
    if (socket === undefined) return
    if (this.phase === 'connecting') {
      // A connect (and its handshake) gets the session timeout over the servers, as the Java client gives it.
      if (now - this.lastHeardAt > (this.negotiatedMs || this.sessionTimeoutMs) / this.hosts.length) socket.destroy()
      return
    }
    if (this.phase !== 'connected') return
    const timeoutMs = this.negotiatedMs
    if (now - this.lastHeardAt > (timeoutMs * 2) / 3) {
      socket.destroy()
      return
    }
    if (now - this.lastSentAt > timeoutMs / 3) {
      this.lastSentAt = now
      socket.write(pingFrame())
    }
  }

  private stopTimer(): void {
    if (this.timer !== undefined) {
      clearInterval(this.timer)
      this.timer = undefined
    }
  }
}
