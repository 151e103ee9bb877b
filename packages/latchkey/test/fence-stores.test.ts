/**
 * The fence guard over each shared store, against the real servers: Redis (ioredis and node-redis),
 * MariaDB (mysql2 promise and callback pools), PostgreSQL (pg) and SQLite (better-sqlite3).
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import mysqlCallback from 'mysql2'
import { afterAll, describe, expect, it } from 'vitest'
import { StaleTokenError } from '../src/errors.js'
import { createFenceGuard, type FenceStore, redisFenceStore, sqlFenceStore } from '../src/fence/index.js'
import { ioredisClient, nodeRedisClient } from './support/redis-backend-module.js'
import { MYSQL_URL, mysqlPool, postgresPool } from './support/sql-backends.js'

const run = randomUUID().slice(0, 8)
const names: string[] = []
const fresh = (what: string) => {
  const name = `fence-${run}:${what}:${randomUUID().slice(0, 6)}`
  names.push(name)
  return name
}

const ioredis = ioredisClient()
const nodeRedis = await nodeRedisClient()
const mysql = mysqlPool()
const mysqlCb = mysqlCallback.createPool({ uri: MYSQL_URL, connectionLimit: 4 })
const postgres = postgresPool()
const sqliteDir = mkdtempSync(join(tmpdir(), 'latchkey-fence-'))
const sqlite = new Database(join(sqliteDir, 'fence.db'))
sqlite.pragma('journal_mode = WAL')

const stores: [string, FenceStore][] = [
  ['redis (ioredis)', redisFenceStore({ client: ioredis })],
  ['redis (node-redis)', redisFenceStore({ client: nodeRedis })],
  ['mariadb (mysql2 promise pool)', sqlFenceStore({ pool: mysql })],
  ['mariadb (mysql2 callback pool)', sqlFenceStore({ pool: mysqlCb })],
  ['postgres (pg Pool)', sqlFenceStore({ pool: postgres })],
  ['sqlite (better-sqlite3)', sqlFenceStore({ pool: sqlite })],
]

afterAll(async () => {
  const keys = names.map((n) => `latchkey-fence:${n}`)
  if (keys.length > 0) await ioredis.del(...keys)
  const binary = names.map((n) => Buffer.from(n, 'utf8'))
  await mysql.query('DELETE FROM latchkey_fence WHERE name IN (?)', [binary])
  await postgres.query('DELETE FROM latchkey_fence WHERE name = ANY($1)', [binary])
  await ioredis.quit()
  await nodeRedis.close()
  await mysql.end()
  await new Promise((resolve) => mysqlCb.end(resolve))
  await postgres.end()
  sqlite.close()
  rmSync(sqliteDir, { recursive: true, force: true })
})

const random = () => BigInt(Math.floor(Math.random() * 1_000_000))

describe.each(stores)('fence store: %s', (_label, store) => {
  const guard = createFenceGuard(store)

  it('admits equal and higher tokens and rejects a lower one with StaleTokenError, exactly beyond 2^53', async () => {
    const name = fresh('order')
    await guard.admit(name, 5n)
    await guard.admit(name, 5n)
    await guard.admit(name, 7n)
    const error = await guard.admit(name, 6n).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StaleTokenError)
    expect((error as StaleTokenError).highestSeen).toBe(7n)
    // 2^60 + 1 and 2^60 + 2 are the same double: compared as numbers the lower one would pass.
    const big = 2n ** 60n
    await guard.admit(name, big + 2n)
    await expect(guard.admit(name, big + 1n)).rejects.toMatchObject({ highestSeen: big + 2n })
    await guard.admit(name, big + 2n)
    await guard.admit(fresh('other'), 1n)
  })

  it('50 concurrent writers: every admit is consistent with the admits that finished before it began, the highest wins', async () => {
    const name = fresh('race')
    type Admit = { token: bigint; admitted: boolean; highest: bigint; startedAt: number; endedAt: number }
    const admits: Admit[] = []
    const writer = async () => {
      for (let i = 0; i < 4; i++) {
        const token = random()
        const startedAt = performance.now()
        const { admitted, highest } = await store.admit(name, token)
        admits.push({ token, admitted, highest, startedAt, endedAt: performance.now() })
      }
    }
    await Promise.all(Array.from({ length: 50 }, writer))
    const max = admits.reduce((m, a) => (a.token > m ? a.token : m), 0n)
    for (const a of admits) {
      if (a.admitted) expect(a.highest).toBe(a.token)
      else expect(a.highest).toBeGreaterThan(a.token)
      // Every admit that finished before this one began saw its token (or a higher one) stored.
      for (const before of admits) {
        if (before.endedAt >= a.startedAt) continue
        if (before.admitted && a.admitted) expect(a.token).toBeGreaterThanOrEqual(before.token)
        if (before.admitted && !a.admitted) expect(a.highest).toBeGreaterThanOrEqual(before.token)
      }
    }
    expect(admits.find((a) => a.token === max)?.admitted).toBe(true)
    expect(admits.filter((a) => a.admitted).length).toBeGreaterThan(0)
    // The highest ended up stored: it is admitted again, one below it is stale.
    expect(await store.admit(name, max)).toEqual({ admitted: true, highest: max })
    expect(await store.admit(name, max - 1n)).toEqual({ admitted: false, highest: max })
  })
})

describe('fence store options', () => {
  it('names the bad option and the value received, before any I/O', () => {
    expect(() => sqlFenceStore({ pool: {} as never })).toThrow(/options\.pool.*received object/)
    expect(() => sqlFenceStore({ pool: sqlite, dialect: 'oracle' as never })).toThrow(RangeError)
    expect(() => redisFenceStore({ client: {} as never })).toThrow(/redisFenceStore needs options\.client/)
    expect(() => redisFenceStore({ client: undefined as never })).toThrow(TypeError)
  })
})
