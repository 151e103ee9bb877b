import { Redis } from 'ioredis'
import { createLocks } from 'latchkey'
import { redisBackend } from 'latchkey/redis'
import type { Contender } from './contender.js'

/** The two entry points a Redis bench takes from a latchkey build: this checkout's, or another build's dist. */
export type LatchkeyRedisLib = { createLocks: typeof createLocks; redisBackend: typeof redisBackend }

/** This checkout's build. */
export const THIS_BUILD: LatchkeyRedisLib = { createLocks, redisBackend }

/**
 * A latchkey build as a harness contender: mutexes of `namespace` (TTL 10 s) on a Redis client of its own, so its
 * commands are not batched with another contender's.
 */
export function latchkeyRedisContender(
  url: string,
  namespace: string,
  options: { readonly lib?: LatchkeyRedisLib; readonly layout?: 'latchkey' | 'redisson' } = {},
): Contender {
  const { lib = THIS_BUILD, layout } = options
  const client = new Redis(url)
  const backend = lib.redisBackend(layout === undefined ? { client } : { client, layout })
  const locks = lib.createLocks({ backend, namespace, ttlMs: 10_000 })
  return {
    acquire: (key, waitMs) => locks.mutex(key).acquire({ waitMs }),
    close: async () => {
      await locks.close()
      await backend.close()
      client.disconnect()
    },
  }
}
