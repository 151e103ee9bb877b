/**
 * Counts the requests every ZooKeeper client of this process sends (pings and authentication excluded), by op code,
 * for the requests-per-acquisition figures of the ZooKeeper bench: latchkey's own client (the sessions its backend
 * opens, counted on the build the contenders load) and node-zookeeper-client (Curator's floor and clients handed
 * in). Installed once per worker process, on the modules the library loads (the same hoisted copies).
 */
import { createRequire } from 'node:module'
import { ZkPendingRequests } from '../../packages/latchkey/dist/backends/zookeeper/wire/zk-pending-requests.js'

const require = createRequire(import.meta.url)
/** ZooKeeper op codes that change state (create, delete, setData, multi, create2). */
const WRITES = new Set([1, 2, 5, 14, 15])
const PING = 11
const AUTH = 100

let requests = 0
let writes = 0
let installed = false

/** Counts a request of op code `type`. */
function count(type: number | undefined): void {
  if (type !== undefined && type !== PING && type !== AUTH) {
    requests++
    if (WRITES.has(type)) writes++
  }
}

/** Starts counting (idempotent). */
export function countZkRequests(): void {
  if (installed) return
  installed = true
  // Every request of the wire client is written by its pending-request list's `write` with its frame (the op code
  // at byte 8), once, whether sent at once, held for the turn's batch or sent again from the parked list.
  const wire = ZkPendingRequests.prototype as { write(pending: { frame: Buffer }): void }
  const write = wire.write
  if (typeof write !== 'function') throw new Error('zk-client-requests: ZkPendingRequests has no write to count')
  wire.write = function (this: unknown, pending) {
    count(pending.frame.readInt32BE(8))
    write.call(this, pending)
  }
  let manager: {
    prototype: { queue(request: { header?: { type?: number; wireType?: number } | null }, cb?: unknown): unknown }
  }
  try {
    manager = require('node-zookeeper-client/lib/ConnectionManager.js')
  } catch {
    return
  }
  const queue = manager.prototype.queue
  manager.prototype.queue = function (this: unknown, request, cb) {
    // latchkey's CREATE2 header answers `type` as a create (the client decodes the reply by it) and names its
    // op code on the wire as `wireType`.
    count(request.header?.wireType ?? request.header?.type)
    return queue.call(this, request, cb)
  }
}

/** Requests and writes sent so far by this process's ZooKeeper clients. */
export const zkRequests = (): { requests: number; writes: number } => ({ requests, writes })
