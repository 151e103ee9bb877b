/**
 * Batched socket writes on a node-zookeeper-client connection (../../backend/write-batches.ts says why, and its
 * `turnHolds` when a request is held and why a batch is bounded): the client writes each request to its
 * socket as soon as it is queued (and disables Nagle); in a CPU profile of 10 waiters over four processes, the socket
 * writes were the largest single share of a worker's time (bench/zookeeper-curator.ts).
 *
 * The client's own sender is replaced: the listener on its packet queue's `readable` event (emitted for every queued
 * request) and its `onPacketQueueReadable` (which it also calls once connected and on 'drain'). This one sends what
 * the queue holds as the client's does (the same xids, the same pending queue, nothing past a close), but serializes
 * the batch into one buffer and hands it to the socket in one `write`: no buffer per request, and no corked
 * stream with a chunk per request to gather into a `writev`. Any other client (or a version without that queue) is
 * left as is.
 */
import { turnHolds } from '../../backend/write-batches.js'
import type { ZkClient } from './zk-client.js'

/** A request as the client queues it: a header (null only for the connect request, never queued) and a payload. */
interface Part {
  byteLength(): number
  serialize(buffer: Buffer, offset: number): number
}
interface Packet {
  readonly request: {
    readonly header: (Part & { xid: number; readonly type: number }) | null
    readonly payload: Part | null
  }
}
/** The parts of node-zookeeper-client 1.x's ConnectionManager this reads and replaces. */
interface Manager {
  readonly state: number
  readonly socket?: { write(buffer: Buffer): boolean; readonly writableNeedDrain?: boolean } | null
  readonly pendingQueue?: Packet[]
  readonly packetQueue?: {
    readonly queue?: Packet[]
    removeAllListeners?(event: string): unknown
    on(event: string, listener: () => void): unknown
  }
  xid: number
  onPacketQueueReadable(): void
}

/** ConnectionManager states in which requests go out (CONNECTED, CONNECTED_READ_ONLY, CLOSING). */
const SENDING = new Set([2, 3, -1])
const PING = 11
const AUTH = 100
const CLOSE_SESSION = -11

const batched = new WeakSet<object>()

/** Makes `client` send the requests queued in one turn in one write (see the module comment); once. */
export function batchWrites(client: ZkClient): void {
  const manager = (client as { connectionManager?: Manager }).connectionManager
  const packets = manager?.packetQueue
  if (
    manager === undefined ||
    !Array.isArray(packets?.queue) ||
    !Array.isArray(manager.pendingQueue) ||
    typeof packets.removeAllListeners !== 'function' ||
    typeof manager.onPacketQueueReadable !== 'function' ||
    batched.has(manager)
  ) {
    return
  }
  batched.add(manager)
  const queue = packets.queue
  const pending = manager.pendingQueue
  /** Sends the queued requests, but for the `keep` newest. */
  const send = (keep = 0): void => {
    const socket = manager.socket
    if (!SENDING.has(manager.state) || socket === undefined || socket === null) return
    // The client's sender stops at a write the socket asks to wait after; 'drain' calls it (this) again.
    if (socket.writableNeedDrain === true || queue.length <= keep) return
    const batch: Packet[] = []
    let size = 0
    while (queue.length > keep) {
      const packet = queue.shift() as Packet
      const { header, payload } = packet.request
      if (header !== null && header.type !== PING && header.type !== AUTH) {
        header.xid = manager.xid
        manager.xid += 1
        pending.push(packet)
      }
      batch.push(packet)
      size += 4 + (header?.byteLength() ?? 0) + (payload?.byteLength() ?? 0)
      // The close should be the last packet sent to the server.
      if (header?.type === CLOSE_SESSION) break
    }
    const buffer = Buffer.alloc(size)
    let at = 0
    for (const { request } of batch) {
      const start = at
      at += 4
      if (request.header !== null) at += request.header.serialize(buffer, at)
      if (request.payload !== null) at += request.payload.serialize(buffer, at)
      buffer.writeInt32BE(at - start - 4, start)
    }
    socket.write(buffer)
  }
  const hold = turnHolds(send)
  manager.onPacketQueueReadable = () => send()
  packets.removeAllListeners('readable')
  packets.on('readable', () => {
    const step = hold(pending.length)
    if (step === 'send') send()
    // The packet is queued already: the full batch leaves without it, and it begins the next.
    else if (step === 'full') send(1)
  })
}
