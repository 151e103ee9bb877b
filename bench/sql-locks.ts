/**
 * SQL backends benchmark: for every strategy of the MySQL/MariaDB and PostgreSQL backends (and Redis beside
 * them when its backend and server are available), uncontended acquire+release pairs/s (one client, one
 * key at a time) and the contended handoff gap: the time from a holder starting `release()` to a waiter on
 * ANOTHER backend instance (its own pool, so no in-process wake-up: what another process would see)
 * holding the lock. Prints one table. Asserts nothing.
 *
 * Run: npx tsx bench/sql-locks.ts [--seconds 2] [--handoffs 25]
 * URLs: LATCHKEY_MYSQL_URL, LATCHKEY_POSTGRES_URL, LATCHKEY_REDIS_URL (loopback defaults).
 */
import { parseArgs } from 'node:util'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { type MysqlStrategy, mysqlBackend } from '../packages/latchkey/src/backends/mysql/index.js'
import { type PostgresStrategy, postgresBackend } from '../packages/latchkey/src/backends/postgres/index.js'
import { type Backend, createLocks } from '../packages/latchkey/src/index.js'

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '2' }, handoffs: { type: 'string', default: '25' } },
})
const seconds = Number(values.seconds)
const handoffs = Number(values.handoffs)
const MYSQL_URL = process.env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const POSTGRES_URL = process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.LATCHKEY_REDIS_URL ?? 'redis://127.0.0.1:6379'
const run = `bench-${process.pid}-${Date.now()}`

/** Opens one backend on its own connection(s); `close` frees both. */
interface Opened {
  backend: Backend
  close(): Promise<void>
}
type Opener = () => Promise<Opened>

async function openMysql(strategy: MysqlStrategy): Promise<Opened> {
  const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 4 })
  const backend = mysqlBackend({ pool, strategy })
  return {
    backend,
    close: async () => {
      await backend.close()
      await pool.end()
    },
  }
}

async function openPostgres(strategy: PostgresStrategy): Promise<Opened> {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 })
  pool.on('error', () => undefined)
  const backend = postgresBackend({ pool, strategy })
  return {
    backend,
    close: async () => {
      await backend.close()
      await pool.end()
    },
  }
}

/** Redis beside the SQL backends, when the Redis backend module and a server are there. */
async function openRedis(): Promise<Opened> {
  const { redisBackend } = await import('../packages/latchkey/src/backends/redis/index.js')
  const { Redis } = await import('ioredis')
  const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
  await client.connect()
  const backend = redisBackend({ client })
  return {
    backend,
    close: async () => {
      await backend.close()
      client.disconnect()
    },
  }
}

/** Sequential acquire+release pairs per second, one client, for `seconds`. */
async function pairsPerSecond(backend: Backend): Promise<number> {
  const locks = createLocks({ backend, namespace: `${run}-u` })
  const lock = locks.mutex('solo')
  await (await lock.acquire()).release() // warm up: tables, connections
  const started = performance.now()
  let pairs = 0
  while (performance.now() - started < seconds * 1000) {
    await (await lock.acquire()).release()
    pairs++
  }
  const elapsed = (performance.now() - started) / 1000
  await locks.close()
  return pairs / elapsed
}

/** Median and p95 of the release-to-acquired gap between two backend instances. */
async function handoffGap(open: Opener): Promise<{ median: number; p95: number }> {
  const [a, b] = [await open(), await open()]
  const holder = createLocks({ backend: a.backend, namespace: `${run}-h` })
  const waiter = createLocks({ backend: b.backend, namespace: `${run}-h`, maxPollMs: 100 })
  const gaps: number[] = []
  try {
    for (let i = 0; i < handoffs; i++) {
      const held = await holder.mutex('hot').acquire({ ttlMs: 10_000 })
      let acquiredAt = 0
      const waiting = waiter
        .mutex('hot')
        .acquire({ waitMs: 10_000 })
        .then((lease) => {
          acquiredAt = performance.now()
          return lease
        })
      // Let the waiter fail its first try and settle into waiting (backoff / subscription).
      await new Promise((resolve) => setTimeout(resolve, 60 + Math.random() * 40))
      const releasedAt = performance.now()
      await held.release()
      const lease = await waiting
      gaps.push(acquiredAt - releasedAt)
      await lease.release()
    }
  } finally {
    await Promise.all([holder.close(), waiter.close()])
    await Promise.all([a.close(), b.close()])
  }
  gaps.sort((x, y) => x - y)
  const at = (q: number): number => gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))] ?? Number.NaN
  return { median: at(0.5), p95: at(0.95) }
}

const targets: Array<[string, string, Opener]> = [
  ['mariadb', 'table', () => openMysql('table')],
  ['mariadb', 'get_lock', () => openMysql('get_lock')],
  ['mariadb', 'for_update', () => openMysql('for_update')],
  ['postgres', 'table', () => openPostgres('table')],
  ['postgres', 'advisory', () => openPostgres('advisory')],
  ['redis', 'default', openRedis],
]

const rows: string[][] = []
for (const [server, strategy, open] of targets) {
  try {
    const opened = await open()
    let pairs: number
    try {
      pairs = await pairsPerSecond(opened.backend)
    } finally {
      await opened.close()
    }
    const gap = await handoffGap(open)
    rows.push([server, strategy, pairs.toFixed(0), gap.median.toFixed(1), gap.p95.toFixed(1)])
  } catch (error) {
    rows.push([server, strategy, 'n/a', 'n/a', `(${(error as Error).message.split('\n')[0]?.slice(0, 60)})`])
  }
  process.stderr.write(`done: ${server} ${strategy}\n`)
}

const header = ['server', 'strategy', 'pairs/s', 'handoff ms (median)', 'handoff ms (p95)']
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)))
const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`
console.log(`\nSQL lock backends, ${seconds} s uncontended run, ${handoffs} handoffs between two backend instances`)
console.log(line(header))
console.log(line(widths.map((w) => '-'.repeat(w))))
for (const row of rows) console.log(line(row))
await cleanup()

/** Removes the rows this run created (it used only its own `run` namespace). */
async function cleanup(): Promise<void> {
  const mp = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 1 })
  for (const t of ['latchkey_holders', 'latchkey_waiters', 'latchkey_locks', 'latchkey_row_locks', 'latchkey_fences']) {
    await mp.query(`DELETE FROM ${t} WHERE LEFT(lock_key, LENGTH(?)) = ?`, [run, run]).catch(() => undefined)
  }
  await mp.end()
  const pp = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 })
  const prefix = Buffer.from(run)
  for (const t of ['latchkey_holders', 'latchkey_waiters', 'latchkey_locks']) {
    await pp
      .query(`DELETE FROM ${t} WHERE substring(lock_key FROM 1 FOR $2) = $1`, [prefix, prefix.length])
      .catch(() => undefined)
  }
  await pp.end()
}
