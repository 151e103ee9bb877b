/**
 * Builds RedLock backends over the five shared nodes (scripts/servers/redlock.sh) for the tests and for the
 * conformance suite's child processes. The backend built here owns its clients: `close()` also closes them.
 */
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import type { Backend } from '../../src/backend/types.js'
import { type RedlockBackendOptions, redlockBackend } from '../../src/backends/redlock/index.js'
import { unlinkMatching } from './redis-backend-module.js'

/** `LATCHKEY_REDLOCK_URLS` (comma-separated), default the five nodes of scripts/servers/redlock.sh. */
export const REDLOCK_URLS = (
  process.env.LATCHKEY_REDLOCK_URLS ?? [6381, 6382, 6383, 6384, 6385].map((p) => `redis://127.0.0.1:${p}`).join(',')
).split(',')

/**
 * An ioredis client for one RedLock node. `maxRetriesPerRequest: 0` so a command caught by a dropped connection
 * fails instead of being re-sent after a reconnect, and a fast reconnect so a restarted node rejoins quickly.
 */
export function redlockIoredis(url: string): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 })
  client.on('error', () => undefined)
  return client
}

type Extra = Omit<RedlockBackendOptions, 'clients'>

/** A backend whose `close()` also closes the clients it was given. */
export function owning(backend: Backend, closeClients: () => Promise<unknown>): Backend {
  const close = async () => {
    await backend.close()
    await closeClients()
  }
  return Object.assign(Object.create(backend) as Backend, { close })
}

/** A RedLock backend over ioredis clients, one per URL. */
export function createRedlockBackend(extra: Extra = {}, urls: readonly string[] = REDLOCK_URLS): Backend {
  const clients = urls.map(redlockIoredis)
  return owning(redlockBackend({ clients, ...extra }), async () => {
    for (const c of clients) c.disconnect()
  })
}

/** A RedLock backend over connected node-redis v5 clients. */
export async function createNodeRedisRedlockBackend(extra: Extra = {}): Promise<Backend> {
  const clients = await Promise.all(
    REDLOCK_URLS.map(async (url) => {
      const client = createClient({ url })
      client.on('error', () => undefined)
      await client.connect()
      return client
    }),
  )
  return owning(redlockBackend({ clients, ...extra }), async () => {
    for (const c of clients) c.destroy()
  })
}

/** Default export for `processBackend.module`. */
export function createBackend(): Backend {
  return createRedlockBackend()
}

/** Deletes, on every node, the RedLock keys of lock names starting with `namespace`. */
export async function deleteRedlockKeys(namespace: string, urls: readonly string[] = REDLOCK_URLS): Promise<void> {
  const { REDLOCK_KEY_PREFIX } = await import('../../src/backends/redlock/index.js')
  const pattern = `${(REDLOCK_KEY_PREFIX + namespace).replace(/[*?[\]\\]/g, '\\$&')}*`
  await Promise.all(
    urls.map(async (url) => {
      const client = redlockIoredis(url)
      try {
        await unlinkMatching(client, [pattern])
      } finally {
        client.disconnect()
      }
    }),
  )
}
