import { backendFromUrl, createLocks } from 'latchkey'
import type { Held, Strategy, StrategyContext } from './strategy.js'

/** latchkey itself: `lock.acquire()` on the backend of `config.url`, its lease's signal and token. */
export async function latchkeyStrategy({ config }: StrategyContext): Promise<Strategy> {
  const backend = await backendFromUrl(config.url)
  const locks = createLocks({ backend, namespace: config.namespace, ttlMs: config.ttlMs })
  const lock = locks.mutex(config.lockName)
  return {
    async acquire(): Promise<Held> {
      const lease = await lock.acquire({ waitMs: 5_000 })
      return {
        token: lease.token,
        signal: lease.signal,
        stillValid: async () => !lease.signal.aborted,
        release: () => lease.release(),
      }
    },
    async close() {
      await locks.close()
      await backend.close()
    },
  }
}
