import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Redis } from 'ioredis'
import { eventually } from 'latchkey/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { type Cluster, type ClusterOptions, startCluster } from '../src/cluster.js'
import { exited } from '../src/fork.js'
import { runSale } from '../src/load/run-sale.js'
import { createSale } from '../src/load/sale-client.js'
import type { RelayCrashPoint, RelayStats } from '../src/strategies/reserve/outbox-relay.js'
import { FAULT_LOAD, STOCK } from './fault-load.js'
import { ADMIN_TOKEN, REDIS_URL, redisKeys, tempDir } from './support.js'

/** What Redis and the store held the moment the relay's process died. */
interface AtCrash {
  /** Order ids of the outbox entries the dead relay had read and not acknowledged. */
  readonly pendingOrders: string[]
  /** How many of them the store already held. */
  readonly inStore: number
}

/** How many orders with each id the SQLite store holds. */
function storedCounts(storePath: string, orderIds: readonly string[]): number[] {
  const db = new Database(storePath, { readonly: true })
  try {
    const count = db.prepare('SELECT COUNT(*) AS n FROM fs_orders WHERE id = ?')
    return orderIds.map((id) => (count.get(id) as { n: number }).n)
  } finally {
    db.close()
  }
}

/** Reads, as soon as `child` is gone, the entries its relay left pending and whether the store has them. */
function watchCrash(child: ChildProcess, redis: Redis, outbox: string, storePath: string): Promise<AtCrash> {
  return exited(child).then(async () => {
    const pending = (await redis.xpending(outbox, 'settlers', '-', '+', 1000)) as Array<[string, string]>
    const mine = pending.filter(([, consumer]) => consumer.includes(`:${child.pid}:`)).map(([id]) => id)
    const pendingOrders: string[] = []
    for (const id of mine) {
      const [[, fields] = ['', []]] = await redis.xrange(outbox, id, id)
      pendingOrders.push(fields[fields.indexOf('order') + 1] as string)
    }
    return { pendingOrders, inStore: storedCounts(storePath, pendingOrders).filter((n) => n > 0).length }
  })
}

async function relayStats(urls: readonly string[]): Promise<RelayStats[]> {
  return Promise.all(
    urls.map(async (url) => ((await (await fetch(`${url}/healthz`)).json()) as { relay: RelayStats }).relay),
  )
}

/**
 * Starts the cluster with the relay of worker `victim` set to kill its own process at `at` of the entry after
 * the 5th it settled, and restarts that worker (same port, no fault) as soon as it is gone.
 */
async function startWithFaultyRelay(options: ClusterOptions, at: RelayCrashPoint, victim: number, clusters: Cluster[]) {
  const crash = { at, after: 5 }
  const first = await startCluster({
    ...options,
    perWorker: (i) => (i === victim ? { reserve: { ...options.reserve, crash } } : {}),
  })
  clusters.push(first)
  const child = first.children[victim] as ChildProcess
  const restarted = exited(child).then(async () => {
    const cluster = await startCluster({ ...options, ports: [Number(new URL(first.urls[victim] as string).port)] })
    clusters.push(cluster)
    return cluster
  })
  return { first, child, restarted }
}

describe('reserve: kill -9 of a relay between reserve and durable write (SQLite store, Redis)', () => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  it.each([
    ['before-commit', 2, 'one of 2 processes dies having read entries it never wrote; the survivor takes them over'],
    ['after-commit', 1, 'the only process dies having written an order it never acknowledged; its restart finds it'],
  ] as Array<[RelayCrashPoint, number, string]>)(
    '%s (%i workers): %s; no order lost, none doubled',
    async (at, workers) => {
      const dir = tempDir()
      const keys = redisKeys()
      const redis = new Redis(REDIS_URL)
      const clusters: Cluster[] = []
      cleanups.push(dir.remove, keys.remove, () => redis.quit().then(() => undefined))
      cleanups.push(() => Promise.all(clusters.map((c) => c.close())).then(() => undefined))
      const storePath = join(dir.path, 'store.db')
      const outbox = `{${keys.prefix}}:outbox`
      const options: ClusterOptions = {
        workers,
        storeUrl: `sqlite:${storePath}`,
        backendUrl: `sqlite:${join(dir.path, 'locks.db')}`,
        redisUrl: REDIS_URL,
        reserve: { keyPrefix: keys.prefix, claimIdleMs: 3_000 },
        adminToken: ADMIN_TOKEN,
      }
      const { first, child, restarted } = await startWithFaultyRelay(options, at, workers - 1, clusters)
      const crash = watchCrash(child, redis, outbox, storePath)
      const sale = { item: `fault-${at}`, stock: STOCK, strategy: 'reserve' } as const
      const { id } = await createSale(first.urls[0] as string, sale, ADMIN_TOKEN)
      const row = await runSale({ ...FAULT_LOAD, urls: first.urls, saleId: id, strategy: 'reserve' })

      expect(child.signalCode).toBe('SIGKILL')
      const atCrash = await crash
      // The kill landed in the window under test: entries read, not acknowledged; written or not as planned.
      expect(atCrash.pendingOrders.length).toBeGreaterThan(0)
      expect(atCrash.inStore).toBe(at === 'after-commit' ? 1 : 0)
      // The sale waits until the store holds every reservation, and an order written before the crash is held
      // already: its entry is redelivered only once it has been pending `claimIdleMs`, which can be after the sale
      // ended (a fast run). So the relay stats are read once the outbox is drained.
      await eventually(
        'the outbox drained (abandoned entries taken over)',
        async () => (await redis.xlen(outbox)) === 0,
        15_000,
        100,
      )
      const stats = await relayStats([...first.urls.slice(0, workers - 1), ...(await restarted).urls])
      const sum = (key: keyof RelayStats): number => stats.reduce((n, s) => n + s[key], 0)
      expect(sum('claimed')).toBeGreaterThanOrEqual(atCrash.pendingOrders.length)
      // The order written before the crash was found on redelivery, not written again.
      if (at === 'after-commit') expect(sum('alreadySettled')).toBeGreaterThanOrEqual(1)
      expect(sum('deadLettered')).toBe(0)
      expect(storedCounts(storePath, atCrash.pendingOrders).every((n) => n === 1)).toBe(true)
      expect(row.result.counts.failed).toBe(0)
      expect(row.result.counts.ordered + row.result.counts.recovered).toBe(STOCK)
      expect(row.checks.map((c) => c.name)).toContain('Redis reserved = store settled')
      for (const check of row.checks) expect(check, check.name).toMatchObject({ ok: true })
      expect(await redis.xlen(outbox)).toBe(0)
    },
    120_000,
  )
})
