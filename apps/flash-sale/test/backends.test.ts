import { Redis } from 'ioredis'
import { latchkeyLayout, REDLOCK_KEY_PREFIX } from 'latchkey/redis'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { unlinkMatching } from '../src/strategies/reserve/open-reserve.js'
import { adminPost, type Instance, post, startInstances, tempDir } from './support.js'

const BUYERS = 1_000
const STOCK = 100

/** The lock backends on servers, as the service would be given them (`--backend URL`). */
const REDIS_URL = process.env.LATCHKEY_REDIS_URL ?? 'redis://127.0.0.1:6379/0'
/** The five RedLock masters of scripts/servers/redlock.sh (`LATCHKEY_REDLOCK_URLS`: redis:// URLs, comma-separated). */
const REDLOCK_URLS = (
  process.env.LATCHKEY_REDLOCK_URLS ?? [6381, 6382, 6383, 6384, 6385].map((p) => `redis://127.0.0.1:${p}`).join(',')
).split(',')
const BACKENDS = [
  ['redis', REDIS_URL],
  ['redlock', `redlock://${REDLOCK_URLS.map((url) => new URL(url).host).join(',')}`],
  ['postgres', process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'],
  ['mysql', process.env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'],
  ['etcd', `etcd://${new URL(process.env.LATCHKEY_ETCD_URL ?? 'http://127.0.0.1:2379').host}`],
  ['zookeeper', `zookeeper://${process.env.LATCHKEY_ZK_URL ?? '127.0.0.1:2181'}`],
] as const

async function deleteKeys(url: string, patterns: readonly string[]): Promise<void> {
  const client = new Redis(url)
  try {
    await unlinkMatching(client, patterns)
  } finally {
    await client.quit()
  }
}

// The service's locks live under the namespace `test:`; remove what they left in Redis (fencing counters) and,
// should a lease have been left to expire, on the RedLock masters (stock locks are named `sale:<id>:<bucket>`).
afterAll(async () => {
  await deleteKeys(REDIS_URL, latchkeyLayout.patternsFor('test:'))
  await Promise.all(REDLOCK_URLS.map((url) => deleteKeys(url, [`${REDLOCK_KEY_PREFIX}test:sale:*`])))
})

// db-atomic takes no lock, so only the lock-based strategies are run against each lock backend.
describe.each(BACKENDS)('%s locks (SQLite store): 1,000 concurrent buyers, 2 service instances', (_name, url) => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  it.each(['lock', 'sharded'])(
    '%s sells exactly the stock, once per user',
    async (strategy) => {
      const dir = tempDir()
      cleanups.push(dir.remove)
      const { instances, close } = await startInstances(dir.path, url as `${string}://${string}`, 2, true)
      cleanups.push(close)
      const [a, b] = instances as [Instance, Instance]
      const id = (await adminPost(a.app, '/sales', { item: 'phone', stock: STOCK, strategy })).body.id as string
      const answers = await Promise.all(
        Array.from({ length: BUYERS }, (_, user) =>
          post(user % 2 === 0 ? a.app : b.app, `/sales/${id}/orders`, { userId: `u${user}`, quantity: 1 }),
        ),
      )
      expect(answers.filter((r) => r.status !== 201 && r.status !== 409).map((r) => r.body)).toEqual([])
      const orderIds = answers.filter((r) => r.status === 201).map((r) => r.body.orderId as string)
      expect(orderIds).toHaveLength(STOCK)
      const audit = await a.store.audit(id)
      expect(audit).toMatchObject({
        initial: STOCK,
        remaining: 0,
        sold: STOCK,
        orders: STOCK,
        usersWithSeveralOrders: 0,
      })
      expect([...(audit?.orderIds ?? [])].sort()).toEqual(orderIds.sort())
    },
    60_000,
  )
})
