import type { Held, Strategy, StrategyContext } from '../client/strategy.js'
import { naiveRedis, pollUntil } from './redis-client.js'

/**
 * SET NX PX (a correct acquire) with an unconditional DEL as unlock. A holder paused past its TTL wakes up and
 * deletes the key its successor now owns, so a third client gets in while the successor is still working.
 */
export async function delUnlockStrategy({ config }: StrategyContext): Promise<Strategy> {
  const redis = naiveRedis(config.url)
  const key = `${config.namespace}:${config.lockName}`
  return {
    async acquire(): Promise<Held> {
      await pollUntil(async () => (await redis.set(key, config.proc, 'PX', config.ttlMs, 'NX')) === 'OK', 'SET NX')
      return { token: 0n, stillValid: async () => true, release: async () => void (await redis.del(key)) }
    },
    close: async () => void redis.disconnect(),
  }
}
