/**
 * latchkey's etcd backend (issue 7) beside etcd3's own Lock and the raw etcd floor, same method as
 * bench/zookeeper-locks.ts and bench/redis-locks.ts:
 *
 *   bash scripts/servers/etcd.sh start
 *   npx tsx bench/etcd-locks.ts        (about 30 s; BENCH_CELL_MS=1000 for a quicker run)
 *
 * - uncontended: one worker, lock + unlock pairs (names cycle over 100), pairs/s;
 * - contended: 10 waiters on one name, each with its own backend / etcd connection (as separate processes would
 *   have), hold 1 ms, think 5 ms after release; the handoff gap is another waiter's acquisition minus the previous
 *   holder's release call. Overlapping holders are counted (must be 0).
 * - floors: etcd3 `Lock` (lease grant + txn + revoke per pair; a try-lock, so uncontended only) and a raw txn put
 *   + delete on one shared lease (what etcd itself costs per pair).
 * Servers: LATCHKEY_ETCD_URL (http://127.0.0.1:2379); LATCHKEY_REDIS_URL (redis://127.0.0.1:6379) as the
 * reference row, skipped when not answering.
 */
import { randomUUID } from 'node:crypto'
import { Etcd3 } from 'etcd3'
import { Redis } from 'ioredis'
import type { Backend } from '../packages/latchkey/src/backend/types.js'
import { etcdBackend } from '../packages/latchkey/src/backends/etcd/index.js'
import { redisBackend } from '../packages/latchkey/src/backends/redis/index.js'
import { createLocks, type Lock, type Locks } from '../packages/latchkey/src/index.js'

const CELL_MS = Number(process.env.BENCH_CELL_MS ?? 3_000)
const WAITERS = 10
const HOLD_MS = 1
const THINK_MS = 5
const etcdUrl = process.env.LATCHKEY_ETCD_URL ?? 'http://127.0.0.1:2379'
const redisUrl = process.env.LATCHKEY_REDIS_URL ?? 'redis://127.0.0.1:6379'
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const now = () => performance.now()
const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '–')
const namespace = `bench-${randomUUID().slice(0, 8)}`

interface Target {
  name: string
  lock(locks: Locks, name: string): Lock
  open(): Promise<{ backend: Backend; close(): Promise<void> }>
}

function etcd(name: string, fair: boolean): Target {
  return {
    name,
    lock: (locks, n) => (fair ? locks.fairMutex(n) : locks.mutex(n)),
    async open() {
      const backend = etcdBackend({ hosts: etcdUrl })
      return { backend, close: () => backend.close() }
    },
  }
}

function redis(): Target {
  return {
    name: 'latchkey redis (reference)',
    lock: (locks, n) => locks.mutex(n),
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
  for (let i = 0; i < 20; i++) await (await target.lock(locks, `warm-${i}`).acquire()).release()
  let pairs = 0
  const t0 = now()
  const end = t0 + CELL_MS
  while (now() < end) {
    const lease = await target.lock(locks, `u-${pairs % 100}`).acquire({ waitMs: 0 })
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
        const lease = await target.lock(locks, 'contended').acquire({ waitMs: 60_000 })
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

/** etcd3's own Lock: a new lease, a put-if-absent txn and a revoke per pair. */
async function etcd3LockPairs(): Promise<number> {
  const client = new Etcd3({ hosts: etcdUrl })
  let pairs = 0
  const t0 = now()
  const end = t0 + CELL_MS
  while (now() < end) {
    const lock = client.lock(`${namespace}/etcd3-lock-${pairs % 100}`).ttl(10)
    await lock.acquire()
    await lock.release()
    pairs++
  }
  client.close()
  return pairs / ((now() - t0) / 1000)
}

/** The floor: a put-if-absent txn and a delete per pair, on one shared lease (Go's session mutex, uncontended). */
async function rawPairs(): Promise<number> {
  const client = new Etcd3({ hosts: etcdUrl })
  const lease = client.lease(10)
  const id = await lease.grant()
  let pairs = 0
  const t0 = now()
  const end = t0 + CELL_MS
  while (now() < end) {
    const key = Buffer.from(`${namespace}/raw-${pairs % 100}`)
    await client.kv.txn({
      compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
      success: [{ request_put: { key, value: Buffer.from('x'), lease: id } }],
    })
    await client.kv.deleteRange({ key })
    pairs++
  }
  const rate = pairs / ((now() - t0) / 1000)
  await lease.revoke()
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
  const targets = [etcd('latchkey etcd mutex', false), etcd('latchkey etcd fair mutex', true), redis()]
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
  console.log(`| etcd3 Lock (try-lock only) | ${fmt(await etcd3LockPairs().catch(() => Number.NaN))} | | | | |`)
  console.log(`| raw etcd txn put + delete, shared lease | ${fmt(await rawPairs().catch(() => Number.NaN))} | | | | |`)
}

await main()
