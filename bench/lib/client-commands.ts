/**
 * Counts the commands every ioredis client of this process sends (subscriber connections included), and the
 * requests of its ZooKeeper clients, for the "client cmds" figure of Redis- and ZooKeeper-based contenders.
 * Installed once per worker process.
 */
import { Redis } from 'ioredis'
import { countZkRequests, zkRequests } from './zk-client-requests.js'

let sent = 0
let installed = false

/** Starts counting (idempotent). */
export function countClientCommands(): void {
  if (installed) return
  installed = true
  countZkRequests()
  const proto = Redis.prototype as unknown as { sendCommand(...args: unknown[]): unknown }
  const send = proto.sendCommand
  proto.sendCommand = function (this: unknown, ...args: unknown[]) {
    sent++
    return send.apply(this, args)
  }
}

/** Commands sent so far by this process's ioredis clients, plus its ZooKeeper clients' requests. */
export const clientCommands = (): number => sent + zkRequests().requests
