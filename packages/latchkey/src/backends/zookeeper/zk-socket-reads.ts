/**
 * The read side of a node-zookeeper-client connection without node's stream machinery. The client opens its socket
 * with a 'data' listener: every chunk read goes through Readable's push and 'data' emit, and the client glues it to
 * what was left of the last one (zk-frames.ts). In a CPU profile of 10 waiters, node's streams, events and the
 * client's own reading were a quarter of a process's time. Here the socket reads into slabs through `onread`
 * (backend/read-slabs.ts, shared with the etcd backend) and each whole frame goes straight to the client's reply
 * handler, which is handed exactly one frame and so never copies.
 *
 * The seam is the client's ConnectionManager `connect`, replaced on the instance before the client connects (and
 * used again on every reconnect): it does what the client's own does, but opens the socket with `onread` and no
 * 'data' listener. A client that lacks that method (another client, a future version) is left as is.
 */
import net from 'node:net'
import { readIntoSlabs } from '../../backend/read-slabs.js'
import { ZkFrames } from './zk-frames.js'

/** The parts of node-zookeeper-client 1.x's ConnectionManager this replaces and calls. */
interface Manager {
  socket?: net.Socket
  connectTimeoutHandler: NodeJS.Timeout | null
  readonly connectTimeout: number
  connect(): void
  setState(state: number): void
  findNextServer(callback: (server: { host: string; port: number | string }) => void): void
  onSocketData(frame: Buffer): void
  onSocketConnected(): void
  onSocketConnectTimeout(): void
  onSocketDrain(): void
  onSocketClosed(hadError: boolean): void
  onSocketError(error: Error): void
}

/** ConnectionManager's CONNECTING state. */
const CONNECTING = 1

const installed = new WeakSet<object>()

/** Makes `client` read its socket through slabs and frames (see the module comment); once, before it connects. */
export function readFramesDirectly(client: object): void {
  const manager = (client as { connectionManager?: Manager }).connectionManager
  if (manager === undefined || typeof manager.findNextServer !== 'function' || installed.has(manager)) return
  if (typeof manager.onSocketData !== 'function' || typeof manager.onSocketConnected !== 'function') return
  installed.add(manager)
  manager.connect = function connect(this: Manager): void {
    this.setState(CONNECTING)
    this.findNextServer((server) => {
      // A frame that made the client drop the connection (a reply out of order) ends that connection's reading.
      const stopped = (): boolean => socket.destroyed
      const frames = new ZkFrames(
        (frame) => this.onSocketData(frame),
        () => socket.destroy(),
      )
      const socket = net.connect({
        host: server.host,
        port: Number(server.port),
        onread: readIntoSlabs((chunk) => frames.push(chunk, stopped)),
      })
      this.socket = socket
      this.connectTimeoutHandler = setTimeout(() => this.onSocketConnectTimeout(), this.connectTimeout)
      socket.setNoDelay()
      socket.on('connect', () => this.onSocketConnected())
      socket.on('drain', () => this.onSocketDrain())
      socket.on('close', (hadError) => this.onSocketClosed(hadError))
      socket.on('error', (error) => this.onSocketError(error))
    })
  }
}
