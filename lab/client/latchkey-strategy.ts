import { backendFromUrl, createLocks } from 'latchkey'
import type { SessionInfo } from '../runner/end-session.js'
import type { Held, Strategy, StrategyContext } from './strategy.js'

/** The raw ZooKeeper client under latchkey's ZooKeeper backend (node-zookeeper-client's session accessors). */
interface RawZkClient {
  getSessionId(): Buffer
  getSessionPassword(): Buffer
}

/**
 * The live ZooKeeper session of a latchkey ZooKeeper backend, read from its internals (no public API gives the
 * password, and a lab-only need is no reason to add one): the nemesis resumes the session with it to close it (T8).
 */
function zkSession(backend: unknown): SessionInfo | undefined {
  const live = (backend as { sessions?: { live?: { client?: RawZkClient } } }).sessions?.live?.client
  if (live === undefined) return undefined
  return { zkSessionId: live.getSessionId().toString('hex'), zkPassword: live.getSessionPassword().toString('hex') }
}

/** latchkey itself: `lock.acquire()` on the backend of `config.url`, its lease's signal and token. */
export async function latchkeyStrategy({ config }: StrategyContext): Promise<Strategy> {
  const backend = await backendFromUrl(config.url)
  const locks = createLocks({ backend, namespace: config.namespace, ttlMs: config.ttlMs })
  const lock = locks.mutex(config.lockName)
  const zookeeper = config.url.startsWith('zookeeper:')
  return {
    async acquire(): Promise<Held> {
      const lease = await lock.acquire({ waitMs: 5_000 })
      const session = zookeeper ? zkSession(backend) : undefined
      return {
        token: lease.token,
        signal: lease.signal,
        ...(session === undefined ? {} : { session }),
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
