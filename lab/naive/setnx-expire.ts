import type { Held, Strategy, StrategyContext } from '../client/strategy.js'
import { naiveRedis, pollUntil } from './redis-client.js'

/**
 * SETNX, then EXPIRE as a second command. A crash between the two leaves a key with no TTL: the lock is held
 * forever and every other client waits until someone deletes it by hand. The nemesis kills at `after-setnx`.
 */
export async function setnxExpireStrategy({ config, point }: StrategyContext): Promise<Strategy> {
  const redis = naiveRedis(config.url)
  const key = `${config.namespace}:${config.lockName}`
  return {
    async acquire(): Promise<Held> {
      await pollUntil(async () => (await redis.setnx(key, '1')) === 1, 'SETNX')
      await point('after-setnx')
      await redis.pexpire(key, config.ttlMs)
      return { token: 0n, stillValid: async () => true, release: async () => void (await redis.del(key)) }
    },
    close: async () => void redis.disconnect(),
  }
}
