/**
 * One RedLock node over the app's client: ioredis 5 or node-redis 4/5, recognised structurally (neither package is
 * imported). Only EVALSHA/EVAL is used, plus the client's own idea of whether it is connected, so a node that is
 * known to be down costs nothing instead of a queued command and a timeout.
 */
import {
  adaptClient,
  type IoredisClientLike,
  type NodeRedisClientLike,
  type RedisClientLike,
} from '../redis/client-adapter.js'
import {
  clientLibrary,
  type IoredisScripting,
  isReconnecting,
  type NodeRedisScripting,
  scriptRunner,
} from '../redis/client-kind.js'
import { type LuaScript, runScript } from '../redis/lua-script.js'
import { scanNode } from '../redis/redis-scan.js'
import type { SubscriberOpener } from './redlock-notifier.js'

/**
 * The slice of an ioredis `Redis` client RedLock uses: the Redis backend's, where `duplicate` is optional. With it
 * (every real client has it) the backend opens one subscriber connection per node for release notifications;
 * without it waiters poll. One client per independent master; not a Cluster.
 */
export type RedlockIoredisLike = Omit<IoredisClientLike, 'duplicate'> & Partial<Pick<IoredisClientLike, 'duplicate'>>

/** The slice of a connected node-redis v4/v5 client (`await createClient({ url }).connect()`) RedLock uses. */
export type RedlockNodeRedisLike = Omit<NodeRedisClientLike, 'duplicate'> &
  Partial<Pick<NodeRedisClientLike, 'duplicate'>>

/** A client for one RedLock master. */
export type RedlockClientLike = RedlockIoredisLike | RedlockNodeRedisLike

/** What the quorum code needs from one master. */
export interface RedlockNode {
  /** `host:port` when the client says, else `node <i>`: used in `QuorumNotReachedError.nodes`. */
  readonly label: string
  /** True while the client waits to reconnect (see isReconnecting): fail this node at once, not after a timeout. */
  readonly offline: boolean
  /** EVALSHA, then EVAL on NOSCRIPT (see runScript). */
  run(script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown>
  /** The keys matching glob `pattern` on this node (SCAN; operator listings only). */
  scan(pattern: string): Promise<string[]>
  /** Opens a duplicate connection for SUBSCRIBE; undefined when the client cannot duplicate itself. */
  readonly openSubscriber: SubscriberOpener | undefined
}

interface Ioredis extends IoredisScripting {
  readonly options?: { host?: string; port?: number }
}

interface NodeRedis extends NodeRedisScripting {
  readonly options?: { url?: string; socket?: { host?: string; port?: number } }
}

function ioredisLabel(client: Ioredis, index: number): string {
  const o = client.options
  return o?.host !== undefined && o.port !== undefined ? `${o.host}:${o.port}` : `node ${index}`
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

/** Wraps one client. Throws `TypeError` for anything that is neither ioredis nor node-redis. */
export function adaptRedlockClient(client: unknown, index: number): RedlockNode {
  const library = clientLibrary(client)
  if (library === undefined) {
    throw new TypeError(
      `latchkey: redlockBackend clients[${index}] must be an ioredis client or a connected node-redis client, one per independent Redis master`,
    )
  }
  const c = client as Ioredis | NodeRedis
  const label = library === 'ioredis' ? ioredisLabel(c as Ioredis, index) : nodeRedisLabel(c as NodeRedis, index)
  const runner = scriptRunner(c)
  const canDuplicate = typeof (client as { duplicate?: unknown }).duplicate === 'function'
  return {
    label,
    get offline() {
      return isReconnecting(c)
    },
    run: (script, keys, args) => runScript(runner, script, keys, args),
    scan: (pattern) =>
      scanNode((args) => {
        const any = c as unknown as {
          call?: (command: string, ...a: string[]) => Promise<unknown>
          sendCommand?: (a: string[]) => Promise<unknown>
        }
        if (library === 'ioredis' && any.call !== undefined) return any.call(args[0] as string, ...args.slice(1))
        if (any.sendCommand !== undefined) return any.sendCommand(args)
        return Promise.reject(new TypeError(`latchkey: redlock ${label} cannot send SCAN`))
      }, pattern),
    openSubscriber: canDuplicate ? adaptClient(client as RedisClientLike).openSubscriber : undefined,
  }
}
