import { describe, expect, it } from 'vitest'
import { backendFromUrl } from '../src/backend-url.js'
import { createLocks } from '../src/core/locks.js'
import { deleteKeys } from './support/redis-backend-module.js'
import { deleteRedlockKeys } from './support/redlock-backend-module.js'
import { cleanupMysql, cleanupPostgres } from './support/sql-backends.js'
import { cleanupNamespace, zkUrl } from './support/zookeeper-env.js'

const namespace = `url-${process.pid}`
/** Each URL and how to remove what the probe leaves (fence counters, lock rows, parent znodes). */
const urls: Array<[string, () => Promise<unknown>]> = [
  [process.env.LATCHKEY_REDIS_URL ?? 'redis://127.0.0.1:6379/0', () => deleteKeys(namespace)],
  [
    'redlock://127.0.0.1:6381,127.0.0.1:6382,127.0.0.1:6383,127.0.0.1:6384,127.0.0.1:6385',
    () => deleteRedlockKeys(namespace),
  ],
  [`zookeeper://${zkUrl()}?sessionTimeoutMs=6000`, () => cleanupNamespace(zkUrl(), namespace)],
  ['etcd://127.0.0.1:2379', async () => undefined],
  [process.env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test', () => cleanupMysql(namespace)],
  [
    `${process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'}?strategy=advisory`,
    () => cleanupPostgres(namespace),
  ],
]

describe('backendFromUrl against the real servers', () => {
  it.each(urls)('%s opens a working backend and closes what it opened', async (url, cleanup) => {
    const backend = await backendFromUrl(url)
    const locks = createLocks({ backend, namespace })
    try {
      const lease = await locks.mutex('probe').acquire({ waitMs: 5_000 })
      expect(await locks.mutex('probe').tryAcquire()).toBeUndefined()
      await lease.release()
      expect(await locks.mutex('probe').isLocked()).toBe(false)
    } finally {
      await locks.close()
      await backend.close()
      await cleanup()
    }
  })

  it('rejects hostless URLs with a RangeError', async () => {
    await expect(backendFromUrl('zookeeper://')).rejects.toBeInstanceOf(RangeError)
    await expect(backendFromUrl('etcd://')).rejects.toBeInstanceOf(RangeError)
  })
})
