/**
 * Builds Redis backends for the tests and for the conformance suite's child processes. The child's backend
 * owns its client: `close()` closes the backend, then the client, so the process can exit by itself.
 */
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import type { Backend } from '../../src/backend/types.js'
import { type RedisBackendOptions, redisBackend } from '../../src/backends/redis/index.js'

/** The Redis server the tests use (`LATCHKEY_REDIS_URL`, default redis://127.0.0.1:6379). */
export const REDIS_URL = process.env.LATCHKEY_REDIS_URL ?? 'redis://127.0.0.1:6379'

type Extra = Omit<RedisBackendOptions, 'client'>

/** A new ioredis client; errors are ignored here because the tests assert on the backend's errors. */
export function ioredisClient(url = REDIS_URL, options: Record<string, unknown> = {}): Redis {
  const client = new Redis(url, { lazyConnect: false, ...options })
  client.on('error', () => undefined)
  return client
}

/** A new, connected node-redis client. */
export async function nodeRedisClient(url = REDIS_URL, options: Record<string, unknown> = {}) {
  const client = createClient({ url, ...options })
  client.on('error', () => undefined)
  await client.connect()
  return client
}

/** A client for `redisBackend` and how to close it. */
export type OpenedClient = { client: RedisBackendOptions['client']; close: () => Promise<unknown> }

/**
 * The two client flavours the Redis tests run against, for `describe.each`: each entry opens a new client on
 * `url()` (a function, so that a server started in `beforeAll` is read when the test runs).
 */
export function clientFlavours(url: () => string): [string, () => Promise<OpenedClient>][] {
  return [
    [
      'ioredis',
      async () => {
        const client = ioredisClient(url())
        return { client, close: () => client.quit().catch(() => client.disconnect()) }
      },
    ],
    [
      'node-redis',
      async () => {
        const client = await nodeRedisClient(url())
        return { client, close: () => client.close() }
      },
    ],
  ]
}

/** A backend whose `close()` also closes the client it was given. */
function owning(backend: Backend, closeClient: () => Promise<unknown>): Backend {
  return new Proxy(backend, {
    get(target, prop, receiver) {
      if (prop === 'close') {
        return async () => {
          await target.close()
          await closeClient()
        }
      }
      const value = Reflect.get(target, prop, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** An ioredis-backed Redis backend that owns its client. */
export function createIoredisBackend(extra: Extra = {}): Backend {
  const client = ioredisClient()
  return owning(redisBackend({ client, ...extra }), () => client.quit())
}

/** A node-redis-backed Redis backend that owns its client. */
export async function createNodeRedisBackend(extra: Extra = {}): Promise<Backend> {
  const client = await nodeRedisClient()
  return owning(redisBackend({ client, ...extra }), () => client.close())
}

/** An ioredis-backed backend in Redisson's layout that owns its client (for child processes). */
export function createRedissonBackend(): Backend {
  return createIoredisBackend({ layout: 'redisson' })
}

/** Default export for `processBackend.module`: the ioredis flavour. */
export function createBackend(): Backend {
  return createIoredisBackend()
}

/** UNLINKs every key matching one of the SCAN `patterns` (SCAN, so the server is never blocked). */
export async function unlinkMatching(client: Redis, patterns: readonly string[]): Promise<void> {
  for (const pattern of patterns) {
    let cursor = '0'
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      cursor = next
      if (keys.length > 0) await client.unlink(...keys)
    } while (cursor !== '0')
  }
}

/** Deletes every key of the latchkey and Redisson layouts whose lock name starts with `namespace` (on `url`). */
export async function deleteKeys(namespace: string, url = REDIS_URL): Promise<void> {
  const client = ioredisClient(url)
  try {
    const { latchkeyLayout, redissonLayout } = await import('../../src/backends/redis/index.js')
    await unlinkMatching(client, [...latchkeyLayout.patternsFor(namespace), ...redissonLayout.patternsFor(namespace)])
  } finally {
    await client.quit()
  }
}
