/**
 * Counts the requests every node-zookeeper-client client of this process sends (pings and authentication
 * excluded), by op code, for the requests-per-acquisition figures of the ZooKeeper bench. Installed once per
 * worker process, on the client module the library loads (the same hoisted copy).
 */
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
/** ZooKeeper op codes that change state (create, delete, setData, multi, create2). */
const WRITES = new Set([1, 2, 5, 14, 15])
const PING = 11
const AUTH = 100

let requests = 0
let writes = 0
let installed = false

/** Starts counting (idempotent); a process without node-zookeeper-client counts nothing. */
export function countZkRequests(): void {
  if (installed) return
  installed = true
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
    const type = request.header?.wireType ?? request.header?.type
    if (type !== undefined && type !== PING && type !== AUTH) {
      requests++
      if (WRITES.has(type)) writes++
    }
    return queue.call(this, request, cb)
  }
}

/** Requests and writes sent so far by this process's ZooKeeper clients. */
export const zkRequests = (): { requests: number; writes: number } => ({ requests, writes })
