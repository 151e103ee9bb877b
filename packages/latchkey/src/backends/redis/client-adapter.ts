/**
 * One small structural adapter over the two Node Redis clients: ioredis 5 and node-redis (`redis`) 4/5.
 * Neither package is imported: the app hands in its client, and only the calls below are used.
 */

import { UnsupportedError } from '../../errors.js'
import {
  clientLibrary,
  type IoredisScripting,
  isReconnecting,
  type NodeRedisScripting,
  scriptRunner,
} from './client-kind.js'
import type { ScriptRunner } from './lua-script.js'
import { type IoredisScannable, scanIoredis, scanNode } from './redis-scan.js'

/** The slice of an ioredis `Redis` (or `Cluster`) client the backend uses. */
export interface IoredisClientLike {
  readonly status: string
  evalsha: (...args: never[]) => unknown
  eval: (...args: never[]) => unknown
  duplicate: (...args: never[]) => unknown
}

/** The slice of a node-redis v4/v5 client (`createClient()`, already connected) the backend uses. */
export interface NodeRedisClientLike {
  readonly isReady: boolean
  readonly isOpen: boolean
  sendCommand: (...args: never[]) => unknown
  duplicate: (...args: never[]) => unknown
}

/** An ioredis or a node-redis client. */
export type RedisClientLike = IoredisClientLike | NodeRedisClientLike

/** The backend's own subscriber connection. */
export interface SubscriberConnection {
  subscribe(channel: string): Promise<void>
  unsubscribe(channel: string): Promise<void>
  close(): Promise<void>
}

/** What the backend needs from a client, whichever library it comes from. */
export interface RedisCommander extends ScriptRunner {
  readonly library: 'ioredis' | 'node-redis'
  /** The server(s) the client talks to (`host:port`, credentials never), for error messages. */
  readonly server: string
  /** True when the client knows it is disconnected (fail fast instead of queueing). */
  readonly offline: boolean
  /** `WAIT numreplicas timeout`: how many replicas acknowledged this connection's writes. */
  waitReplicas(replicas: number, timeoutMs: number): Promise<number>
  /**
   * The keys matching glob `pattern` (SCAN; each master of an ioredis Cluster). For operator listings only.
   * Rejects with `UnsupportedError` on a node-redis cluster client.
   */
  scan(pattern: string): Promise<string[]>
  /** Opens a duplicate connection for SUBSCRIBE; errors on it are reported to `onError`, never thrown. */
  openSubscriber(
    onMessage: (channel: string, message: string) => void,
    onError: (e: unknown) => void,
  ): SubscriberConnection
}

type Emitter = {
  on(event: string, fn: (...args: never[]) => void): unknown
  removeListener(event: string, fn: (...args: never[]) => void): unknown
}

interface Ioredis extends Emitter, IoredisScripting {
  readonly options?: { host?: string; port?: number; path?: string }
  /** A Cluster client's seed nodes. */
  readonly startupNodes?: ReadonlyArray<string | number | { host?: string; port?: number }>
  call(command: string, ...args: string[]): Promise<unknown>
  duplicate(): Ioredis
  subscribe(channel: string): Promise<unknown>
  unsubscribe(channel: string): Promise<unknown>
  disconnect(): void
}

interface NodeRedis extends Emitter, NodeRedisScripting {
  readonly options?: { url?: string; socket?: { host?: string; port?: number; path?: string } }
  duplicate(): NodeRedis
  connect(): Promise<unknown>
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>
  unsubscribe(channel: string): Promise<unknown>
  destroy?(): void
  disconnect?(): Promise<unknown>
}

/** Whether `error` is a Redis error reply (as opposed to a connection or client-side failure). */
export function isReplyError(error: unknown): error is Error {
  for (let p = error as object | null; p !== null && p !== undefined; p = Object.getPrototypeOf(p)) {
    const name = (p as { constructor?: { name?: string } }).constructor?.name
    if (name === 'ReplyError' || name === 'ErrorReply') return true
  }
  return false
}

/** Whether `error` is Redis's NOSCRIPT reply (EVALSHA of a script the server has not loaded). */
export function isNoScript(error: unknown): boolean {
  return isReplyError(error) && error.message.startsWith('NOSCRIPT')
}

/** Wraps the app's client. Throws `TypeError` for anything that is neither ioredis nor node-redis. */
export function adaptClient(client: RedisClientLike): RedisCommander {
  const library = clientLibrary(client)
  if (library === undefined) {
    throw new TypeError('latchkey: redisBackend needs options.client, an ioredis or a connected node-redis client')
  }
  const c = client as unknown as Ioredis | NodeRedis
  const own = library === 'ioredis' ? ioredisParts(c as Ioredis) : nodeRedisParts(c as NodeRedis)
  return {
    library,
    get offline() {
      return isReconnecting(c)
    },
    ...scriptRunner(c),
    ...own,
  }
}

/** What each library does its own way: naming its server, WAIT, and a subscriber connection. */
type LibraryParts = Pick<RedisCommander, 'server' | 'waitReplicas' | 'openSubscriber' | 'scan'>

/** `host:port` of an ioredis client (a Cluster client: its seed nodes), as error messages name it. */
export function ioredisServer(client: Ioredis): string {
  if (Array.isArray(client.startupNodes)) {
    return client.startupNodes
      .map((n) => (typeof n === 'object' ? `${n.host ?? '127.0.0.1'}:${n.port ?? 6379}` : String(n)))
      .join(',')
  }
  const o = client.options
  if (o?.path !== undefined) return o.path
  return `${o?.host ?? '127.0.0.1'}:${o?.port ?? 6379}`
}

/** `host:port` of a node-redis client, from its socket options or its URL (never its credentials). */
export function nodeRedisServer(client: NodeRedis): string {
  const s = client.options?.socket
  if (s?.path !== undefined) return s.path
  if (s?.host !== undefined || s?.port !== undefined) return `${s?.host ?? 'localhost'}:${s?.port ?? 6379}`
  const url = client.options?.url
  if (url !== undefined) {
    try {
      const u = new URL(url)
      return `${u.hostname}:${u.port || 6379}`
    } catch {
      // not a URL: fall through
    }
  }
  return 'localhost:6379'
}

function ioredisParts(client: Ioredis): LibraryParts {
  return {
    server: ioredisServer(client),
    scan: (pattern) => scanIoredis(client as unknown as IoredisScannable, pattern),
    async waitReplicas(replicas, timeoutMs) {
      return Number(await client.call('WAIT', String(replicas), String(timeoutMs)))
    },
    openSubscriber(onMessage, onError) {
      const sub = client.duplicate()
      sub.on('error', onError as (...args: never[]) => void)
      sub.on('message', onMessage as (...args: never[]) => void)
      return {
        subscribe: async (channel) => {
          await ready(sub)
          await sub.subscribe(channel)
        },
        unsubscribe: async (channel) => {
          await ready(sub)
          await sub.unsubscribe(channel)
        },
        close: async () => sub.disconnect(),
      }
    },
  }
}

/**
 * Resolves once the ioredis connection `sub` is ready; rejects if it ends for good first. A (UN)SUBSCRIBE must
 * not go out earlier: ioredis writes commands that Redis allows while loading (SUBSCRIBE is one) at once during
 * its connection handshake, which puts the connection in subscriber mode before the handshake's ready check
 * (INFO) is sent. ioredis then refuses that check, drops the connection and reconnects, and since the connection
 * never was ready it does not resubscribe the channels it had acknowledged: their messages are lost for as long
 * as they stay subscribed. The handshake lasts long enough for this on a loaded host (seen: hundreds of ms, with
 * a RedLock waiter subscribing a second lock's channel meanwhile; ioredis 5.11).
 */
async function ready(sub: Ioredis): Promise<void> {
  // A loop, not one wait: the connection may have dropped again by the time this resumes.
  while (sub.status !== 'ready') {
    if (sub.status === 'end') throw new Error('latchkey: the subscriber connection is closed')
    await new Promise<void>((resolve) => {
      const done = () => {
        sub.removeListener('ready', done)
        sub.removeListener('end', done)
        resolve()
      }
      sub.on('ready', done)
      sub.on('end', done)
    })
  }
}

function nodeRedisParts(client: NodeRedis): LibraryParts {
  return {
    server: nodeRedisServer(client),
    async scan(pattern) {
      // A node-redis cluster client routes commands by key; SCAN has none.
      if ('masters' in client) throw new UnsupportedError('latchkey: listing locks needs an ioredis Cluster client')
      return scanNode((args) => client.sendCommand(args as never) as Promise<unknown>, pattern)
    },
    async waitReplicas(replicas, timeoutMs) {
      return Number(await client.sendCommand(['WAIT', String(replicas), String(timeoutMs)]))
    },
    openSubscriber(onMessage, onError) {
      const sub = client.duplicate()
      sub.on('error', onError as (...args: never[]) => void)
      const connected = sub.connect()
      connected.catch(onError)
      const listener = (message: string, channel: string) => onMessage(channel, message)
      return {
        subscribe: async (channel) => {
          await connected
          await sub.subscribe(channel, listener)
        },
        unsubscribe: async (channel) => {
          await connected
          await sub.unsubscribe(channel)
        },
        close: async () => {
          await connected.catch(() => undefined)
          if (typeof sub.destroy === 'function') sub.destroy()
          else await sub.disconnect?.()
        },
      }
    },
  }
}
