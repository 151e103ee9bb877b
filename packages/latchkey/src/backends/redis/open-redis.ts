/**
 * Opens a Redis backend from a URL with a client of its own (for `backendFromUrl`, CLIs and scripts):
 * ioredis when installed, else node-redis. Unlike `redisBackend({ client })`, this backend owns its client
 * and closes it in `close()`.
 */
import { isIP } from 'node:net'
import type { Backend } from '../../backend/types.js'
import { shownUrl } from '../../backend/url-parts.js'
import { BackendUnavailableError, UnsupportedError } from '../../errors.js'
import { redactText } from '../../redact-url.js'
import type { RedisClientLike } from './client-adapter.js'
import { RedisBackend } from './redis-backend.js'
import type { RedisBackendOptions } from './redis-backend-options.js'
import { parseRedisUrl, type RedisUrl } from './redis-url.js'

class OwningRedisBackend extends RedisBackend {
  constructor(
    options: RedisBackendOptions,
    private readonly closeClient: () => Promise<unknown>,
  ) {
    super(options)
  }

  override async close(): Promise<void> {
    await super.close()
    await this.closeClient()
  }
}

type Opened = { client: RedisClientLike; close: () => Promise<unknown> }

/** The ioredis calls {@link guardDatabase} needs. */
export type IoredisEmitter = {
  readonly status: string
  on(event: string, listener: (error: Error) => void): unknown
  removeListener(event: string, listener: (error: Error) => void): unknown
  disconnect(): void
}

type Ioredis = RedisClientLike & {
  readonly status: string
  on(event: string, listener: (error: Error) => void): void
  removeListener(event: string, listener: (error: Error) => void): void
  quit(): Promise<unknown>
  disconnect(): void
}

/** ioredis reports a refused SELECT only as an 'error' event, then serves every command from database 0. */
const DB_REFUSED = /DB index is out of range|invalid DB index/i

async function openIoredis(parsed: RedisUrl, url: string, waitMs: number): Promise<Opened | undefined> {
  const mod = (await import('ioredis').catch(() => undefined)) as
    | { Redis: new (options: Record<string, unknown>) => Ioredis }
    | undefined
  if (mod === undefined) return undefined
  const client = new mod.Redis({
    host: parsed.server.host,
    port: parsed.server.port,
    db: parsed.db,
    ...(parsed.username === undefined ? {} : { username: parsed.username }),
    ...(parsed.password === undefined ? {} : { password: parsed.password }),
    // SNI takes a host name only (RFC 6066): Node warns when given an IP address.
    ...(parsed.tls ? { tls: isIP(parsed.server.host) === 0 ? { servername: parsed.server.host } : {} } : {}),
  })
  // Errors surface as BackendUnavailableError on each call; the client keeps reconnecting.
  client.on('error', () => undefined)
  // A client that never connected has a reconnect timer pending: quit() would queue QUIT behind it forever.
  const close = () =>
    client.status === 'ready' ? client.quit().catch(() => client.disconnect()) : Promise.resolve(client.disconnect())
  await guardDatabase(client, parsed.db, `Redis ${parsed.label}`, url, waitMs)
  return { client, close }
}

/**
 * Makes a refused database index an error instead of a silent database 0. ioredis sends SELECT on each
 * connect and reports a refusal only as an 'error' event, then runs every command in database 0. So: wait
 * for the first connection (at most `waitMs`; at once when the server is unreachable) and throw a
 * `RangeError` naming `server` and the database when it is refused; a refusal on a later connect disconnects
 * the client, so its commands fail instead of writing to database 0.
 */
export async function guardDatabase(
  client: IoredisEmitter,
  db: number,
  server: string,
  url: string,
  waitMs: number,
): Promise<void> {
  if (db === 0) return
  client.on('error', (error) => {
    if (DB_REFUSED.test(error.message)) client.disconnect()
  })
  const refused = await firstSelect(client, waitMs)
  if (refused === undefined) return
  client.disconnect()
  throw new RangeError(
    `latchkey: ${server} refused database ${db} of ${shownUrl(url)} (${refused.message}); use a database below the server's "databases" setting`,
    { cause: refused },
  )
}

/**
 * Waits for the first connection's outcome: the SELECT error when the server refuses the database, undefined
 * once the client is ready, or at once when the server cannot be reached (the check then happens on connect).
 */
function firstSelect(client: IoredisEmitter, waitMs: number): Promise<Error | undefined> {
  return new Promise((resolve) => {
    const finish = (value: Error | undefined): void => {
      clearTimeout(timer)
      client.removeListener('ready', onReady)
      client.removeListener('error', onError)
      resolve(value)
    }
    const onReady = (): void => finish(undefined)
    const onError = (error: Error): void => finish(DB_REFUSED.test(error.message) ? error : undefined)
    const timer = setTimeout(() => finish(undefined), waitMs)
    timer.unref()
    client.on('ready', onReady)
    client.on('error', onError)
  })
}

async function openNodeRedis(parsed: RedisUrl): Promise<Opened | undefined> {
  type NodeRedis = RedisClientLike & {
    on(e: string, f: () => void): void
    connect(): Promise<unknown>
    close?(): Promise<unknown>
    quit?(): Promise<unknown>
    destroy?(): void
  }
  const mod = (await import('redis').catch(() => undefined)) as
    | { createClient(options: { url: string }): NodeRedis }
    | undefined
  if (mod === undefined) return undefined
  const client = mod.createClient({ url: parsed.clientUrl })
  client.on('error', () => undefined)
  try {
    await client.connect()
  } catch (error) {
    client.destroy?.()
    throw new BackendUnavailableError(
      `Could not connect to Redis ${parsed.label}: ${redactText(String((error as Error)?.message ?? error), secrets(parsed))}`,
      { cause: error },
    )
  }
  return { client, close: () => (client.close?.() ?? client.quit?.() ?? Promise.resolve()).catch(() => undefined) }
}

function secrets(parsed: RedisUrl): string[] {
  return parsed.password === undefined ? [] : [parsed.password]
}

/**
 * A Redis backend on its own client for `url` (`redis://host:port/db`, `rediss://...`).
 *
 * @example
 * const backend = await openRedisBackend('redis://127.0.0.1:6379', { layout: 'redisson' })
 * // ...
 * await backend.close() // closes the client too
 */
export async function openRedisBackend(
  url: string,
  options: Omit<RedisBackendOptions, 'client'> = {},
): Promise<Backend> {
  const parsed = parseRedisUrl(url)
  const fromUrl: Omit<RedisBackendOptions, 'client'> = {
    ...(parsed.layout === undefined ? {} : { layout: parsed.layout }),
    ...(parsed.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: parsed.commandTimeoutMs }),
    ...(parsed.subscriberLingerMs === undefined ? {} : { subscriberLingerMs: parsed.subscriberLingerMs }),
  }
  const merged = { ...fromUrl, ...options }
  const opened = (await openIoredis(parsed, url, merged.commandTimeoutMs || 5_000)) ?? (await openNodeRedis(parsed))
  if (opened === undefined) {
    throw new UnsupportedError(
      'latchkey: a redis:// backend needs the ioredis or the redis package; install one of them',
    )
  }
  return new OwningRedisBackend({ ...merged, client: opened.client }, opened.close)
}
