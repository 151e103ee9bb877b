/**
 * The session half of latchkey's own ZooKeeper client (zk-wire-client.ts has the requests): one session over one
 * socket at a time, as ZooKeeper's Java client keeps it:
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
 */
import { EventEmitter } from 'node:events'
import net from 'node:net'
import { readIntoSlabs } from '../../../backend/read-slabs.js'
import { shuffle } from '../../../backend/shuffle.js'
import { type HostPort, parseHostList } from '../../../backend/url-parts.js'
import { ZkFrames } from '../zk-frames.js'
import { XID } from './zk-jute.js'
import { type OnReply, ZkPendingRequests } from './zk-pending-requests.js'
import { closeFrame, connectFrame, pingFrame, readConnectResponse, setWatchesFrame } from './zk-requests.js'
import { ZkWatches } from './zk-watches.js'

const CONNECTION_LOSS = -4
const SESSION_EXPIRED = -112
/** A reply's header: length, xid, zxid, err. */
const REPLY_HEADER = 4 + 16
/** Wait before dialling again once every server was tried. */
const RETRY_MS = 100

type Phase = 'idle' | 'connecting' | 'connected' | 'closing' | 'closed' | 'expired'

export abstract class ZkWireConnection extends EventEmitter {
  /** `h1:2181,h2:2181`: what errors name. */
  readonly servers: string
  private readonly hosts: HostPort[]
  private nextHost = 0
  private phase: Phase = 'idle'
  private socket: net.Socket | undefined
  private sessionId: Buffer = Buffer.alloc(8)
  private passwd: Buffer = Buffer.alloc(16)
  private negotiatedMs = 0
  /** The last zxid seen, as two int32 halves (a Buffer only when a reconnect sends it). */
  private zxidHigh = 0
  private zxidLow = 0
  private readonly requests = new ZkPendingRequests(() => this.socket)
  protected readonly watches = new ZkWatches()
  private lastHeardAt = 0
  private timer: NodeJS.Timeout | undefined

  constructor(
    connectString: string,
    private readonly sessionTimeoutMs: number,
  ) {
    super()
    this.servers = connectString
    this.hosts = shuffle(parseHostList(connectString, 2181, connectString))
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

  /** Ends the session (the server deletes its ephemeral nodes at once); 'disconnected' once the socket is gone. */
  close(): void {
    if (this.phase === 'closing' || this.phase === 'closed') return
    const wasConnected = this.phase === 'connected'
    this.phase = 'closing'
    this.stopTimer()
    this.requests.failParked(CONNECTION_LOSS)
    const socket = this.socket
    if (!wasConnected || socket === undefined) {
      this.destroy()
      return
    }
    this.requests.write(this.requests.create(closeFrame, 'closeSession', '', () => socket.destroy()))
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
  protected send(build: (xid: number) => Buffer, op: string, path: string, onReply: OnReply): void {
    const pending = this.requests.create(build, op, path, onReply)
    if (this.phase === 'connected') this.requests.write(pending)
    else if (this.phase === 'connecting' || this.phase === 'idle') this.requests.park(pending)
    else {
      const code = this.phase === 'expired' ? SESSION_EXPIRED : CONNECTION_LOSS
      queueMicrotask(() => this.requests.fail(pending, code))
    }
  }

  private dial(): void {
    const target = this.hosts[this.nextHost % this.hosts.length] as HostPort
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
    socket.on('connect', () =>
      socket.write(connectFrame(this.lastZxid(), this.sessionTimeoutMs, this.sessionId, this.passwd)),
    )
    socket.on('error', () => undefined) // 'close' follows, which moves on
    socket.on('close', () => this.onClose(socket))
    this.lastHeardAt = performance.now()
    this.startTimer()
  }

  /** The server's answer to the connect: the session, or (a timeout of 0) word that it expired. */
  private onConnected(frame: Buffer, socket: net.Socket): void {
    const { timeOut, sessionId, passwd } = readConnectResponse(frame)
    if (timeOut <= 0) {
      this.phase = 'expired'
      socket.destroy()
      this.emit('expired')
      return
    }
    const first = this.negotiatedMs === 0
    this.negotiatedMs = timeOut
    this.sessionId = sessionId
    this.passwd = passwd
    this.phase = 'connected'
    this.lastHeardAt = performance.now()
    this.startTimer()
    const watched = first ? undefined : this.watches.paths()
    if (watched !== undefined) socket.write(setWatchesFrame(this.lastZxid(), watched.data, [], watched.child))
    this.requests.sendParked()
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
    if (xid < 0) return // a ping's or SetWatches' reply (XID): nothing waits for them
    // The reply's zxid: the server's last one, kept when positive (-1 on some replies, 0 on others), as Java does.
    const zxidHigh = frame.readInt32BE(8)
    const zxidLow = frame.readInt32BE(12)
    if (zxidHigh > 0 || (zxidHigh === 0 && zxidLow !== 0)) {
      this.zxidHigh = zxidHigh
      this.zxidLow = zxidLow
    }
    // Replies come in the order of the requests; anything else means the stream is not what we think.
    if (!this.requests.answer(frame, xid, frame.readInt32BE(16))) this.socket?.destroy()
  }

  private onClose(socket: net.Socket): void {
    if (socket !== this.socket) return
    this.socket = undefined
    this.requests.failInFlight(CONNECTION_LOSS)
    if (this.phase === 'closing' || this.phase === 'closed') {
      this.finishClose()
      return
    }
    if (this.phase === 'expired') {
      this.stopTimer()
      this.requests.failParked(SESSION_EXPIRED)
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
    this.requests.failParked(CONNECTION_LOSS)
    this.emit('disconnected')
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
    if (now - this.requests.lastSentAt > timeoutMs / 3) {
      this.requests.lastSentAt = now
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
