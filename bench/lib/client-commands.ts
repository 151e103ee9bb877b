/**
 * Counts the commands every ioredis client of this process sends (subscriber connections included), for
 * the "client cmds" figure of Redis-based contenders. Installed once per worker process.
 */
import { Redis } from 'ioredis'

let sent = 0
let installed = false

/** Starts counting (idempotent). */
export function countClientCommands(): void {
  if (installed) return
  installed = true
  const proto = Redis.prototype as unknown as { sendCommand(...args: unknown[]): unknown }
  const send = proto.sendCommand
  proto.sendCommand = function (this: unknown, ...args: unknown[]) {
    sent++
    return send.apply(this, args)
  }
}

/** Commands sent so far by this process's ioredis clients. */
export const clientCommands = (): number => sent
