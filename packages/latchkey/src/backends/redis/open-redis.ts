/**
 * Opens a Redis backend from a URL with a client of its own (for `backendFromUrl`, CLIs and scripts):
 * ioredis when installed, else node-redis. Unlike `redisBackend({ client })`, this backend owns its client
 * and closes it in `close()`.
 */
import type { Backend } from '../../backend/types.js'
import { BackendUnavailableError, UnsupportedError } from '../../errors.js'
import type { RedisClientLike } from './client-adapter.js'
import { RedisBackend, type RedisBackendOptions } from './redis-backend.js'

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

async function openIoredis(url: string): Promise<Opened | undefined> {
  const mod = (await import('ioredis').catch(() => undefined)) as
    | { Redis: new (url: string) => RedisClientLike & { on(e: string, f: () => void): void; quit(): Promise<unknown> } }
    | undefined
  if (mod === undefined) return undefined
  const client = new mod.Redis(url)
  // Errors surface as BackendUnavailableError on each call; the client keeps reconnecting.
  client.on('error', () => undefined)
  return { client, close: () => client.quit().catch(() => undefined) }
}

async function openNodeRedis(url: string): Promise<Opened | undefined> {
  type NodeRedis = RedisClientLike & {
    on(e: string, f: () => void): void
    connect(): Promise<unknown>
    close?(): Promise<unknown>
    quit?(): Promise<unknown>
  }
  const mod = (await import('redis').catch(() => undefined)) as
    | { createClient(options: { url: string }): NodeRedis }
    | undefined
  if (mod === undefined) return undefined
  const client = mod.createClient({ url })
  client.on('error', () => undefined)
  try {
    await client.connect()
  } catch (error) {
    throw new BackendUnavailableError(`Could not connect to Redis at ${url}`, { cause: error })
  }
  return { client, close: () => (client.close?.() ?? client.quit?.() ?? Promise.resolve()).catch(() => undefined) }
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
  const opened = (await openIoredis(url)) ?? (await openNodeRedis(url))
  if (opened === undefined) {
    throw new UnsupportedError(
      'latchkey: a redis:// backend needs the ioredis or the redis package; install one of them',
    )
  }
  return new OwningRedisBackend({ ...options, client: opened.client }, opened.close)
}
