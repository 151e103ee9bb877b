import { randomUUID } from 'node:crypto'
import type { Held, Strategy, StrategyContext } from '../client/strategy.js'
import { naiveRedis, pollUntil } from './redis-client.js'

/** How much TTL the check wants left before it lets the client write. */
const MARGIN_MS = 200

/**
 * SET NX PX with a random value and a compare-and-delete unlock (all correct), but instead of a fencing token the
 * client checks, just before writing, that the key is still its own with at least MARGIN_MS to live. A pause
 * between that check and the write (the nemesis strikes at `in-cs`, right after it) lets two holders write.
 */
export async function ttlCheckStrategy({ config }: StrategyContext): Promise<Strategy> {
  const redis = naiveRedis(config.url)
  const key = `${config.namespace}:${config.lockName}`
  return {
    async acquire(): Promise<Held> {
      const mine = randomUUID()
      await pollUntil(async () => (await redis.set(key, mine, 'PX', config.ttlMs, 'NX')) === 'OK', 'SET NX')
      return {
        token: 0n,
        stillValid: async () => {
          const [value, ttl] = await Promise.all([redis.get(key), redis.pttl(key)])
          return value === mine && ttl > MARGIN_MS
        },
        release: async () => {
          await redis.eval(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end",
            1,
            key,
            mine,
          )
        },
      }
    },
    close: async () => void redis.disconnect(),
  }
}
