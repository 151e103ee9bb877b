/**
 * One RedLock node over the app's client: ioredis 5 or node-redis 4/5, recognised structurally (neither package is
 * imported). Only EVALSHA/EVAL is used, plus the client's own idea of whether it is connected, so a node that is
 * known to be down costs nothing instead of a queued command and a timeout.
 */
import { type LuaScript, runScript, type ScriptRunner } from '../redis/lua-script.js'

/** The slice of an ioredis `Redis` client RedLock uses (one client per independent master; not a Cluster). */
export interface RedlockIoredisLike {
  readonly status: string
  evalsha: (...args: never[]) => unknown
  eval: (...args: never[]) => unknown
}

/** The slice of a connected node-redis v4/v5 client (`await createClient({ url }).connect()`) RedLock uses. */
export interface RedlockNodeRedisLike {
  readonly isReady: boolean
  readonly isOpen: boolean
  sendCommand: (...args: never[]) => unknown
}

/** A client for one RedLock master. */
export type RedlockClientLike = RedlockIoredisLike | RedlockNodeRedisLike

/** What the quorum code needs from one master. */
export interface RedlockNode {
  /** `host:port` when the client says, else `node <i>`: used in `QuorumNotReachedError.nodes`. */
  readonly label: string
  /** True when the client knows it has no connection (reconnecting, closed): fail this node at once. */
  readonly offline: boolean
  /** EVALSHA, then EVAL on NOSCRIPT (see runScript). */
  run(script: LuaScript, key: string, args: readonly string[]): Promise<unknown>
}

interface Ioredis {
  readonly status: string
  readonly options?: { host?: string; port?: number }
  evalsha(sha: string, numKeys: number, ...args: string[]): Promise<unknown>
  eval(source: string, numKeys: number, ...args: string[]): Promise<unknown>
}

interface NodeRedis {
  readonly isReady: boolean
  readonly isOpen: boolean
  readonly options?: { url?: string; socket?: { host?: string; port?: number } }
  sendCommand(args: string[]): Promise<unknown>
}

/** ioredis states in which a command would only sit in the offline queue. */
const IOREDIS_DOWN = new Set(['reconnecting', 'close', 'end'])

function ioredisNode(client: Ioredis, index: number): RedlockNode {
  const runner: ScriptRunner = {
    evalsha: (script, keys, args) => client.evalsha(script.sha, keys.length, ...keys, ...args),
    eval: (script, keys, args) => client.eval(script.source, keys.length, ...keys, ...args),
  }
  const o = client.options
  const label = o?.host !== undefined && o.port !== undefined ? `${o.host}:${o.port}` : `node ${index}`
  return {
    label,
    get offline() {
      return IOREDIS_DOWN.has(client.status)
    },
    run: (script, key, args) => runScript(runner, script, [key], args),
  }
}

function nodeRedisLabel(client: NodeRedis, index: number): string {
  const s = client.options?.socket
  if (s?.host !== undefined && s.port !== undefined) return `${s.host}:${s.port}`
  const url = client.options?.url
  if (url !== undefined) {
    try {
      return new URL(url).host
    } catch {
      // fall through to the index
    }
  }
  return `node ${index}`
}

function nodeRedisNode(client: NodeRedis, index: number): RedlockNode {
  const label = nodeRedisLabel(client, index)
  const runner: ScriptRunner = {
    evalsha: (script, keys, args) => client.sendCommand(['EVALSHA', script.sha, String(keys.length), ...keys, ...args]),
    eval: (script, keys, args) => client.sendCommand(['EVAL', script.source, String(keys.length), ...keys, ...args]),
  }
  return {
    label,
    get offline() {
      return !client.isReady
    },
    run: (script, key, args) => runScript(runner, script, [key], args),
  }
}

/** Wraps one client. Throws `TypeError` for anything that is neither ioredis nor node-redis. */
export function adaptRedlockClient(client: unknown, index: number): RedlockNode {
  const c = client as Record<string, unknown> | null
  if (typeof c === 'object' && c !== null) {
    if (typeof c.evalsha === 'function' && typeof c.status === 'string')
      return ioredisNode(c as unknown as Ioredis, index)
    if (typeof c.sendCommand === 'function' && typeof c.isReady === 'boolean') {
      return nodeRedisNode(c as unknown as NodeRedis, index)
    }
  }
  throw new TypeError(
    `latchkey: redlockBackend clients[${index}] must be an ioredis client or a connected node-redis client, one per independent Redis master`,
  )
}
