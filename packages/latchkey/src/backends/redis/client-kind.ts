/**
 * How latchkey tells the two Node Redis clients apart and asks either whether it is connected: one rule for the
 * Redis backend, the fence store and every RedLock master. Neither package is imported; a client is recognised
 * by its shape.
 */
import { batchedWrites } from './batched-writes.js'
import type { ScriptRunner } from './lua-script.js'

/** The part of an ioredis client (`Redis` or `Cluster`) that recognition, scripts and the offline test use. */
export interface IoredisScripting {
  readonly status: string
  evalsha(sha: string, numKeys: number, ...args: string[]): Promise<unknown>
  eval(source: string, numKeys: number, ...args: string[]): Promise<unknown>
}

/** The part of a node-redis v4/v5 client that recognition, scripts and the offline test use. */
export interface NodeRedisScripting {
  readonly isReady: boolean
  readonly isOpen: boolean
  sendCommand(args: string[]): Promise<unknown>
}

/**
 * Which library `client` comes from: `ioredis` (has `evalsha` and a `status` string), `node-redis` (has
 * `sendCommand` and an `isReady` flag), or `undefined` for anything else.
 */
export function clientLibrary(client: unknown): 'ioredis' | 'node-redis' | undefined {
  if (typeof client !== 'object' || client === null) return undefined
  const c = client as Record<string, unknown>
  if (typeof c.evalsha === 'function' && typeof c.status === 'string') return 'ioredis'
  if (typeof c.sendCommand === 'function' && typeof c.isReady === 'boolean') return 'node-redis'
  return undefined
}

function isIoredis(client: IoredisScripting | NodeRedisScripting): client is IoredisScripting {
  return clientLibrary(client) === 'ioredis'
}

/** ioredis states in which a command would only sit in the offline queue (or be refused) until a reconnect. */
const IOREDIS_DOWN: ReadonlySet<string> = new Set(['reconnecting', 'close', 'end'])

/**
 * Whether the client knows it has no connection and is waiting to get one back, so a command would only queue
 * behind the reconnect: fail it at once instead. A node-redis client that is closed (`isOpen` false) is not
 * waiting: it rejects a command at once with its own "client is closed" error, which says more than ours.
 */
export function isReconnecting(client: IoredisScripting | NodeRedisScripting): boolean {
  if (isIoredis(client)) return IOREDIS_DOWN.has(client.status)
  return client.isOpen && !client.isReady
}

/** EVALSHA and EVAL through either client. */
export function scriptRunner(client: IoredisScripting | NodeRedisScripting): ScriptRunner {
  if (isIoredis(client)) {
    const beforeWrite = batchedWrites(client)
    return {
      evalsha: (script, keys, args) => {
        beforeWrite()
        return client.evalsha(script.sha, keys.length, ...keys, ...args)
      },
      eval: (script, keys, args) => client.eval(script.source, keys.length, ...keys, ...args),
    }
  }
  return {
    evalsha: (script, keys, args) => client.sendCommand(['EVALSHA', script.sha, String(keys.length), ...keys, ...args]),
    eval: (script, keys, args) => client.sendCommand(['EVAL', script.source, String(keys.length), ...keys, ...args]),
  }
}
