import type { Held, Strategy, StrategyContext } from '../client/strategy.js'
import { naiveRedis, pollUntil } from './redis-client.js'

/**
 * The old Redis SETNX-page algorithm: the value is the holder's expiry as a wall-clock timestamp; a waiter that
 * reads an expired timestamp takes the lock over with GETSET and wins if the old value it got back was still the
 * expired one. Nothing tells a holder that was paused past its timestamp that it was taken over, and its
 * release (DEL when its own clock says it has not expired) can free the successor's lock.
 */
export async function getsetTimestampStrategy({ config, point }: StrategyContext): Promise<Strategy> {
  const redis = naiveRedis(config.url)
  const key = `${config.namespace}:${config.lockName}`
  return {
    async acquire(): Promise<Held> {
      let expiresAt = 0
      await pollUntil(async () => {
        expiresAt = Date.now() + config.ttlMs + 1
        if ((await redis.setnx(key, String(expiresAt))) === 1) return true
        const current = Number(await redis.get(key))
        if (!(current < Date.now())) return false
        await point('after-get')
        // The new timestamp is computed after the pause, just before GETSET, as the algorithm says.
        expiresAt = Date.now() + config.ttlMs + 1
        const old = Number(await redis.getset(key, String(expiresAt)))
        return old < Date.now()
      }, 'GET/GETSET')
      return {
        token: 0n,
        stillValid: async () => Date.now() < expiresAt,
        release: async () => {
          if (Date.now() < expiresAt) await redis.del(key)
        },
      }
    },
    close: async () => void redis.disconnect(),
  }
}
