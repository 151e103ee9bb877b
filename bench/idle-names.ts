/**
 * What each backend keeps per lock name once the lock was released and left idle: takes and releases N
 * distinct mutex names (a lock per order) on every backend against the shared servers, then counts what is
 * left right after release and once idle (Redis counters, SQL rows, ZooKeeper nodes, etcd keys, the memory
 * backend's map and heap), with sizes where the server reports them. Prints a markdown table; cleans up.
 *
 *   node --expose-gc --import tsx bench/idle-names.ts [names]      (default 2000; servers as in DEVELOPERS.md)
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Etcd3 } from 'etcd3'
import type { Backend } from '../packages/latchkey/src/backend/types.js'
import { etcdBackend } from '../packages/latchkey/src/backends/etcd/index.ts'
import { memoryBackend } from '../packages/latchkey/src/backends/memory/index.ts'
import { type MysqlStrategy, mysqlBackend } from '../packages/latchkey/src/backends/mysql/index.ts'
import { type PostgresStrategy, postgresBackend } from '../packages/latchkey/src/backends/postgres/index.ts'
import {
  latchkeyLayout,
  REDLOCK_KEY_PREFIX,
  redisBackend,
  redissonLayout,
} from '../packages/latchkey/src/backends/redis/index.ts'
import { sqliteBackend } from '../packages/latchkey/src/backends/sqlite/index.ts'
import { zookeeperBackend } from '../packages/latchkey/src/backends/zookeeper/index.ts'
import { createLocks } from '../packages/latchkey/src/index.ts'
import { ETCD_URL } from '../packages/latchkey/test/support/etcd-backend-module.ts'
import { eventually } from '../packages/latchkey/test/support/eventually.ts'
import { ioredisClient, unlinkMatching } from '../packages/latchkey/test/support/redis-backend-module.ts'
import { countKeys } from '../packages/latchkey/test/support/redis-idle-names.ts'
import { createRedlockBackend, deleteRedlockKeys } from '../packages/latchkey/test/support/redlock-backend-module.ts'
import { mysqlPool, postgresPool } from '../packages/latchkey/test/support/sql-backends.ts'
import { childrenOf, rawClient, removeTree, zkUrl } from '../packages/latchkey/test/support/zookeeper-env.ts'
import { mntr } from './lib/zk-mntr.ts'

const N = Number(process.argv[2] ?? 2_000)
const run = randomUUID().slice(0, 8)
const rows: string[] = []
const report = (backend: string, after: string, idle: string, note = '') =>
  rows.push(`| ${backend} | ${after} | ${idle} | ${note} |`)

/** Takes and releases N names in `namespace`, 8 at a time (the session strategies pin a connection each). */
async function churn(backend: Backend, namespace: string): Promise<void> {
  const locks = createLocks({ backend, namespace })
  let next = 0
  const worker = async () => {
    while (next < N) {
      const lease = await locks.mutex(`order:${next++}`).tryAcquire()
      if (lease === undefined) throw new Error('lock not free')
      await lease.release()
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  await locks.close()
}

async function redis(): Promise<void> {
  const client = ioredisClient()
  const ns = `idle-${run}-redis`
  const backend = redisBackend({ client, fenceIdleTtlMs: 3_000 })
  const patterns = latchkeyLayout.patternsFor(ns)
  await churn(backend, ns)
  const left = await countKeys(client, patterns)
  const bytes = await client.memory('USAGE', latchkeyLayout.keysOf({ key: `${ns}:order:0`, kind: 'mutex' }).keys[6])
  await eventually('redis idle', async () => (await countKeys(client, patterns)) === 0, 30_000, 100)
  report(
    'Redis',
    `${left} keys (the fencing counter, MEMORY USAGE ${bytes} B)`,
    '0 keys after `fenceIdleTtlMs` (3 s here)',
  )
  await backend.close()
  await unlinkMatching(client, patterns)
  await client.quit()
}

async function redisson(): Promise<void> {
  const client = ioredisClient()
  const ns = `idle-${run}-redisson`
  const backend = redisBackend({ client, layout: 'redisson' })
  await churn(backend, ns)
  const patterns = redissonLayout.patternsFor(ns)
  const left = await countKeys(client, patterns)
  report('Redis, Redisson layout', `${left} keys (\`redisson_lock_token:{name}\`)`, `${left} keys (never expire)`)
  await backend.close()
  await unlinkMatching(client, patterns)
  await client.quit()
}

async function redlock(): Promise<void> {
  const ns = `idle-${run}-redlock`
  const backend = createRedlockBackend()
  await churn(backend, ns)
  const client = ioredisClient('redis://127.0.0.1:6381')
  const left = await countKeys(client, [`${REDLOCK_KEY_PREFIX}${ns}*`])
  report('RedLock (per node)', `${left} keys`, `${left} keys`)
  await client.quit()
  await backend.close()
  await deleteRedlockKeys(ns)
}

async function sqlite(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-idle-'))
  const backend = sqliteBackend({ path: join(dir, 'locks.db') })
  await churn(backend, 'idle')
  await backend.close()
  const db = new Database(join(dir, 'locks.db'))
  const count = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
  const tables = ['latchkey_holders', 'latchkey_waiters', 'latchkey_counters']
  report('SQLite', tables.map((t) => `${t}: ${count(t)}`).join(', '), 'same', 'the 2 counter rows are global')
  db.close()
  rmSync(dir, { recursive: true, force: true })
}

const SQL_TABLES = ['latchkey_locks', 'latchkey_holders', 'latchkey_waiters', 'latchkey_row_locks', 'latchkey_fences']

async function mysql(strategy: MysqlStrategy): Promise<void> {
  const ns = `idle-${run}-my-${strategy}`
  const pool = mysqlPool()
  const backend = mysqlBackend({ pool, strategy })
  await churn(backend, ns)
  await backend.close()
  const counts: string[] = []
  let bytes = ''
  for (const table of SQL_TABLES) {
    const [exists] = await pool.query('SHOW TABLES LIKE ?', [table])
    if ((exists as unknown[]).length === 0) continue
    const [r] = await pool.query(`SELECT count(*) AS n FROM ${table} WHERE lock_key LIKE ?`, [`${ns}%`])
    const n = Number((r as { n: number }[])[0]?.n)
    if (n > 0) {
      counts.push(`${table}: ${n}`)
      // InnoDB's own estimate (statistics refreshed by ANALYZE): average bytes per row, index excluded.
      await pool.query(`ANALYZE TABLE ${table}`)
      const [stats] = await pool.query(
        'SELECT AVG_ROW_LENGTH AS b FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?',
        [table],
      )
      bytes += `, ${table} ~${(stats as { b: number }[])[0]?.b} B/row`
    }
    await pool.query(`DELETE FROM ${table} WHERE lock_key LIKE ?`, [`${ns}%`])
  }
  const left = counts.join(', ') || '0 rows'
  report(`MySQL \`${strategy}\``, `${left}${bytes}`, counts.length > 0 ? `${left} (never deleted)` : left)
  await pool.end()
}

async function postgres(strategy: PostgresStrategy): Promise<void> {
  const ns = `idle-${run}-pg-${strategy}`
  const pool = postgresPool()
  const size = async () =>
    Number((await pool.query("SELECT pg_total_relation_size('latchkey_locks') AS b")).rows[0]?.b ?? 0)
  const exists = async () => (await pool.query("SELECT to_regclass('latchkey_locks') AS t")).rows[0]?.t !== null
  const before = (await exists()) ? await size() : 0
  const backend = postgresBackend({ pool, strategy })
  await churn(backend, ns)
  await backend.close()
  const counts: string[] = []
  let bytes = ''
  for (const table of SQL_TABLES.slice(0, 3)) {
    if ((await pool.query('SELECT to_regclass($1) AS t', [table])).rows[0]?.t === null) continue
    const like = [Buffer.from(`${ns}%`)]
    const n = Number((await pool.query(`SELECT count(*) AS n FROM ${table} WHERE lock_key LIKE $1`, like)).rows[0]?.n)
    if (n > 0) counts.push(`${table}: ${n}`)
    if (table === 'latchkey_locks' && n > 0)
      bytes = `, table + index grew ${Math.round(((await size()) - before) / n)} B/row`
    await pool.query(`DELETE FROM ${table} WHERE lock_key LIKE $1`, like)
  }
  const left = counts.join(', ') || '0 rows'
  report(`PostgreSQL \`${strategy}\``, `${left}${bytes}`, counts.length > 0 ? `${left} (never deleted)` : left)
  await pool.end()
}

async function zookeeper(): Promise<void> {
  const root = `/latchkey-idle-${run}`
  const backend = zookeeperBackend({ connectString: zkUrl(), root, lockNodeIdleMs: 10_000 })
  const before = await mntr()
  await churn(backend, 'idle')
  const client = await rawClient(zkUrl())
  const after = (await childrenOf(client, root)).length
  const grown = await mntr()
  const perNode = ((grown.bytes - before.bytes) / (grown.znodes - before.znodes)).toFixed(0)
  let idle = -1
  await eventually(
    'zookeeper idle',
    async () => {
      idle = (await childrenOf(client, root)).length
      return idle === 0
    },
    30_000,
    100,
  )
  report(
    'ZooKeeper',
    `${after} lock nodes (persistent, empty; ${perNode} B of path each by \`mntr\`)`,
    `${idle} after \`lockNodeIdleMs\` (10 s here, 2 s by default)`,
  )
  await backend.close()
  await removeTree(client, root)
  client.close()
}

async function etcd(): Promise<void> {
  const prefix = `latchkey-idle-${run}`
  const backend = etcdBackend({ hosts: ETCD_URL, prefix })
  await churn(backend, 'idle')
  const client = new Etcd3({ hosts: ETCD_URL })
  const left = await client.getAll().prefix(`${prefix}/`).count()
  report('etcd', `${left} keys`, `${left} keys`, 'tokens are revisions: nothing per name to keep')
  await backend.close()
  await client.delete().prefix(`${prefix}/`)
  client.close()
}

async function memory(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const before = process.memoryUsage().heapUsed
  const backend = memoryBackend()
  await churn(backend, 'idle')
  gc?.()
  const grown = process.memoryUsage().heapUsed - before
  const entries = (backend as unknown as { locks: Map<string, unknown> }).locks.size
  const heap = gc === undefined ? 'run with --expose-gc for the heap' : `heap +${Math.round(grown / N)} B/name`
  report('memory', `${entries} map entries (${heap})`, `${entries} map entries`)
  await backend.close()
}

const steps: [string, () => Promise<void>][] = [
  ['memory', memory],
  ['sqlite', sqlite],
  ['redis', redis],
  ['redis redisson', redisson],
  ['redlock', redlock],
  ['mysql table', () => mysql('table')],
  ['mysql get_lock', () => mysql('get_lock')],
  ['mysql for_update', () => mysql('for_update')],
  ['postgres table', () => postgres('table')],
  ['postgres advisory', () => postgres('advisory')],
  ['zookeeper', zookeeper],
  ['etcd', etcd],
]
for (const [name, step] of steps) {
  const started = performance.now()
  await step().catch((error: unknown) => report(name, `failed: ${String(error)}`, ''))
  console.error(`${name}: ${Math.round(performance.now() - started)} ms`)
}
console.log(`${N} names acquired and released per backend`)
console.log('| backend | right after release | once idle | note |\n| --- | --- | --- | --- |')
console.log(rows.join('\n'))
