/**
 * latchkey's ZooKeeper backend beside its Redis backend (issue 5), same method as bench/redis-locks.ts:
 *
 *   bash scripts/servers/zookeeper.sh start [&& bash scripts/servers/zookeeper.sh start-ensemble]
 *   npx tsx bench/zookeeper-locks.ts        (about 30 s; BENCH_CELL_MS=1000 for a quicker run)
 *
 * - uncontended: one worker, lock + unlock pairs on one name, pairs/s (plus raw
 *   create+delete of an EPHEMERAL_SEQUENTIAL znode as the floor ZooKeeper itself sets);
 * - contended: 10 waiters on one name, each with its own session / connection (as separate processes
 *   would have), hold 1 ms, think 5 ms after release; the handoff gap is another waiter's acquisition
 *   minus the previous holder's release call. Overlapping holders are counted (must be 0).
 * Servers: LATCHKEY_ZK_URL (127.0.0.1:2181), LATCHKEY_ZK_ENSEMBLE_PORTS (2291,2292,2293; skipped when not
 * serving), LATCHKEY_REDIS_URL (redis://127.0.0.1:6379; skipped when not answering).
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import zookeeper from 'node-zookeeper-client'
import type { Backend } from '../packages/latchkey/src/backend/types.js'
import { redisBackend } from '../packages/latchkey/src/backends/redis/index.js'
import { zookeeperBackend } from '../packages/latchkey/src/backends/zookeeper/index.js'
import { createLocks } from '../packages/latchkey/src/index.js'

const CELL_MS = Number(process.env.BENCH_CELL_MS ?? 3_000)
const WAITERS = 10
const HOLD_MS = 1
const THINK_MS = 5
const zkUrl = process.env.LATCHKEY_ZK_URL ?? '127.0.0.1:2181'
const ensemble = (process.env.LATCHKEY_ZK_ENSEMBLE_PORTS ?? '2291,2292,2293')
  .split(',')
  .map((p) => `127.0.0.1:${p}`)
  .join(',')
const redisUrl = process.env.LATCHKEY_REDIS_URL ?? 'redis://127.0.0.1:6379'
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const now = () => performance.now()
const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '–')
const namespace = `bench-${randomUUID().slice(0, 8)}`

interface Target {
  name: string
  open(): Promise<{ backend: Backend; close(): Promise<void> }>
}

function zk(name: string, connectString: string): Target {
  return {
    name,
    async open() {
      const backend = zookeeperBackend({ connectString, sessionTimeoutMs: 10_000 })
      return { backend, close: () => backend.close() }
    },
  }
}

function redis(): Target {
  return {
    name: 'latchkey redis',
    async open() {
      const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
      await client.connect()
      const backend = redisBackend({ client })
      const close = async (): Promise<void> => {
        await backend.close()
        await client.quit()
      }
      return { backend, close }
    },
  }
}

async function uncontended(target: Target): Promise<number> {
  const { backend, close } = await target.open()
  const locks = createLocks({ backend, namespace, ttlMs: 10_000 })
  let pairs = 0
  for (let i = 0; i < 20; i++) await (await locks.mutex('uncontended').acquire()).release()
  const end = now() + CELL_MS
  const t0 = now()
  while (now() < end) {
    const lease = await locks.mutex('uncontended').acquire({ waitMs: 0 })
    await lease.release()
    pairs++
  }
  const rate = pairs / ((now() - t0) / 1000)
  await locks.close()
  await close()
  return rate
}

interface Contended {
  rate: number
  gaps: number[]
  perWaiter: number[]
  overlaps: number
}

async function contended(target: Target): Promise<Contended> {
  const opened = await Promise.all(Array.from({ length: WAITERS }, () => target.open()))
  const all = opened.map((o) => createLocks({ backend: o.backend, namespace, ttlMs: 10_000 }))
  const r: Contended = { rate: 0, gaps: [], perWaiter: new Array(WAITERS).fill(0), overlaps: 0 }
  let holder = -1
  let last: { who: number; releasedAt: number } | undefined
  let acquisitions = 0
  const t0 = now()
  const end = t0 + CELL_MS
  await Promise.all(
    all.map(async (locks, w) => {
      while (now() < end) {
        const lease = await locks.mutex('contended').acquire({ waitMs: 60_000 })
        const at = now()
        if (holder !== -1) r.overlaps++
        holder = w
        if (last !== undefined && last.who !== w) r.gaps.push(at - last.releasedAt)
        acquisitions++
        r.perWaiter[w] = (r.perWaiter[w] as number) + 1
        await sleep(HOLD_MS)
        holder = -1
        last = { who: w, releasedAt: now() }
        await lease.release()
        await sleep(THINK_MS)
      }
    }),
  )
  r.rate = acquisitions / ((now() - t0) / 1000)
  await Promise.all(all.map((l) => l.close()))
  await Promise.all(opened.map((o) => o.close()))
  return r
}

/** The floor: raw create + delete of one EPHEMERAL_SEQUENTIAL znode per pair. */
async function rawZnodePairs(connectString: string): Promise<number> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 10_000 })
  await new Promise<void>((resolve) => {
    client.once('connected', () => resolve())
    client.connect()
  })
  const p = <T>(f: (cb: (e: unknown, v: T) => void) => void) =>
    new Promise<T>((res, rej) => f((e, v) => (e ? rej(e) : res(v))))
  const base = `/latchkey-bench-${randomUUID().slice(0, 8)}`
  await p((cb) => client.create(base, cb))
  let pairs = 0
  const t0 = now()
  const end = t0 + CELL_MS
  while (now() < end) {
    const path = await p<string>((cb) => client.create(`${base}/n-`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, cb))
    await p((cb) => client.remove(path, cb))
    pairs++
  }
  const rate = pairs / ((now() - t0) / 1000)
  await p((cb) => client.remove(base, cb))
  // Our lock nodes are gone (deleted on backend close); the root too if nobody else uses it.
  await p((cb) => client.remove('/latchkey', cb)).catch(() => undefined)
  client.close()
  return rate
}

async function reachable(target: Target): Promise<boolean> {
  try {
    const o = await Promise.race([target.open(), sleep(3_000).then(() => undefined)])
    if (o === undefined) return false
    await o.backend.isLocked({ key: `${namespace}:probe`, kind: 'mutex', permits: 1 })
    await o.close()
    return true
  } catch {
    return false
  }
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number)
}

async function main(): Promise<void> {
  const targets = [
    zk('latchkey zookeeper (standalone)', zkUrl),
    zk('latchkey zookeeper (3-node ensemble)', ensemble),
    redis(),
  ]
  console.log(
    `cell ${CELL_MS} ms, ${WAITERS} waiters, hold ${HOLD_MS} ms, think ${THINK_MS} ms, node ${process.version}\n`,
  )
  console.log(
    '| backend | uncontended pairs/s | contended acq/s | handoff gap p50 / p99 ms | fairness max/min | overlaps |',
  )
  console.log('|---|---|---|---|---|---|')
  for (const target of targets) {
    if (!(await reachable(target))) {
      console.log(`| ${target.name} | not reachable, skipped | | | | |`)
      continue
    }
    const pairs = await uncontended(target)
    const c = await contended(target)
    const gaps = [...c.gaps].sort((a, b) => a - b)
    const max = Math.max(...c.perWaiter)
    const min = Math.min(...c.perWaiter)
    console.log(
      `| ${target.name} | ${fmt(pairs)} | ${fmt(c.rate)} | ${fmt(percentile(gaps, 50), 2)} / ${fmt(percentile(gaps, 99), 2)} | ${min === 0 ? '∞' : fmt(max / min, 2)} | ${c.overlaps} |`,
    )
  }
  for (const [name, cs] of [
    ['raw znode create+delete (standalone)', zkUrl],
    ['raw znode create+delete (ensemble)', ensemble],
  ] as const) {
    const rate = await rawZnodePairs(cs).catch(() => Number.NaN)
    console.log(`| ${name} | ${fmt(rate)} | | | | |`)
  }
}

await main()
