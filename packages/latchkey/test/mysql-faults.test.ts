/**
 * MySQL / MariaDB specifics: 200 concurrent acquirers without a deadlock, killed connections (a lost lease
 * for the session strategies, nothing for the table strategy), an exhausted pool, the FOUND_ROWS flag,
 * hashed GET_LOCK names and fencing counters that survive deleted rows.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { Backend } from '../src/backend/types.js'
import { getLockName, type MysqlStrategy, mysqlBackend, mysqlBackendFromUrl } from '../src/backends/mysql/index.js'
import {
  BackendUnavailableError,
  createLocks,
  type LockEvent,
  LockLostError,
  NotLockHolderError,
} from '../src/index.js'
import { cleanupMysql, MYSQL_URL, mysqlPool } from './support/sql-backends.js'
import { abortedWithin, delay, idsOf, namespace } from './support/sql-faults.js'

const ns = namespace('lkm')
const admin = mysqlPool({ connectionLimit: 2 })
afterAll(async () => {
  await cleanupMysql(ns)
  await admin.end()
})

/** A backend on its own pool; `done()` closes both. */
function open(strategy: MysqlStrategy, poolOptions: Parameters<typeof mysqlPool>[0] = {}, connectTimeoutMs?: number) {
  const pool = mysqlPool(poolOptions)
  const backend: Backend = mysqlBackend({ pool, strategy, ...(connectTimeoutMs ? { connectTimeoutMs } : {}) })
  return {
    pool,
    backend,
    done: async () => {
      await backend.close()
      await pool.end()
    },
  }
}

const POOL_20 = { connectionLimit: 20 }

async function kill(threadId: number): Promise<void> {
  await admin.query('KILL CONNECTION ?', [threadId])
}

describe('mysql table strategy', () => {
  it('200 concurrent acquirers on one lock: exact counter, no deadlock or any other backend error', async () => {
    const { backend, done } = open('table', POOL_20)
    const errors: unknown[] = []
    const onEvent = (e: LockEvent): void => void (e.type === 'backend-error' && errors.push(e.error))
    const instances = Array.from({ length: 10 }, () => createLocks({ backend, namespace: ns, onEvent, maxPollMs: 500 }))
    let counter = 0
    let inside = 0
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        instances[i % 10]?.mutex('two-hundred').withLock(async () => {
          inside++
          expect(inside).toBe(1)
          const read = counter
          await delay(1)
          counter = read + 1
          inside--
        }),
      ),
    )
    expect(counter).toBe(200)
    expect(errors).toEqual([])
    await Promise.all(instances.map((l) => l.close()))
    await done()
  }, 120_000)

  it('mixed kinds on 8 neighbouring keys (fair, read/write, semaphore, mutex): no deadlock or other backend error', async () => {
    const { backend, done } = open('table', POOL_20)
    const errors: unknown[] = []
    const onEvent = (e: LockEvent): void => void (e.type === 'backend-error' && errors.push(e.error))
    const locks = Array.from({ length: 4 }, () => createLocks({ backend, namespace: ns, onEvent }))
    const pick = (i: number) => {
      const l = locks[i % 4] ?? locks[0]
      const name = `adjacent-${i % 8}`
      const kinds = [
        () => l?.fairMutex(name),
        () => l?.readWrite(name).read,
        () => l?.readWrite(name).write,
        () => l?.semaphore(`${name}-s`, { permits: 2 }),
        () => l?.mutex(`${name}-m`),
      ]
      return kinds[i % kinds.length]?.()
    }
    await Promise.all(Array.from({ length: 120 }, (_, i) => pick(i)?.withLock(() => delay(2), { waitMs: 60_000 })))
    expect(errors).toEqual([])
    await Promise.all(locks.map((l) => l.close()))
    await done()
  }, 120_000)

  it('survives killed pool connections: the lease stays held, renews, releases', async () => {
    const { pool, backend, done } = open('table', { connectionLimit: 3 })
    const locks = createLocks({ backend, namespace: ns })
    const lease = await locks.mutex('killed-pool').acquire({ ttlMs: 600 })
    for (const id of await idsOf(pool)) await kill(id)
    await delay(1_500)
    expect(lease.signal.aborted).toBe(false)
    expect(await createLocks({ backend, namespace: ns }).mutex('killed-pool').tryAcquire()).toBeUndefined()
    await lease.extend()
    await lease.release()
    expect(await locks.mutex('killed-pool').isLocked()).toBe(false)
    await locks.close()
    await done()
  })

  it('renew and exclusion are right with and without the FOUND_ROWS client flag', async () => {
    for (const flags of [[], ['-FOUND_ROWS']]) {
      const { backend, done } = open('table', { flags })
      const request = { key: `${ns}:found-rows-${flags.length}`, kind: 'mutex' as const, permits: 1, lockDelayMs: 0 }
      const a = { ...request, owner: 'a', ttlMs: 5_000, queue: false, queueTtlMs: 1_000 }
      expect((await backend.tryAcquire(a)).acquired).toBe(true)
      expect((await backend.tryAcquire({ ...a, owner: 'b' })).acquired).toBe(false)
      // Two renews in the same millisecond write identical values: "changed" would be 0, "matched" is 1.
      expect(await Promise.all([backend.renew(a), backend.renew(a)])).toEqual([true, true])
      expect(await backend.renew({ ...a, owner: 'b' })).toBe(false)
      expect(await backend.release(a)).toBe(true)
      expect(await backend.release(a)).toBe(false)
      await done()
    }
  })

  it('fencing tokens keep rising after every holder row was deleted', async () => {
    const { backend, done } = open('table')
    const locks = createLocks({ backend, namespace: ns })
    const first = await locks.mutex('fence-rows').acquire()
    await first.release()
    await admin.query('DELETE FROM latchkey_holders WHERE lock_key = ?', [`${ns}:fence-rows`])
    expect(await backend.forceRelease({ key: `${ns}:fence-rows`, kind: 'mutex' })).toBe(false)
    const second = await locks.mutex('fence-rows').acquire()
    expect(second.token > first.token).toBe(true)
    await second.release()
    await locks.close()
    await done()
  })
})

describe.each(['get_lock', 'for_update'] as const)('mysql %s strategy', (strategy) => {
  it('KILL of the pinned connection aborts lease.signal with LockLostError', async () => {
    const { backend, done } = open(strategy)
    const locks = createLocks({ backend, namespace: ns })
    const lease = await locks.mutex(`kill-${strategy}`).acquire({ ttlMs: 900 })
    const holder = await holderThread(strategy, `${ns}:kill-${strategy}`)
    await kill(holder)
    expect(await abortedWithin(lease.signal, 2_000)).toBeInstanceOf(LockLostError)
    await expect(lease.release()).rejects.toBeInstanceOf(NotLockHolderError)
    const next = await createLocks({ backend, namespace: ns }).mutex(`kill-${strategy}`).acquire({ waitMs: 2_000 })
    // for_update draws tokens in autocommit, so the killed holder's rollback did not give its token back.
    if (strategy === 'for_update') expect(next.token > lease.token).toBe(true)
    await next.release()
    await locks.close()
    await done()
  })

  it('an exhausted pool fails fast with BackendUnavailableError instead of hanging', async () => {
    // Each held lock pins one connection; for_update also needs a second one for a moment, to draw its token.
    const { backend, done } = open(strategy, { connectionLimit: strategy === 'get_lock' ? 2 : 3 }, 300)
    const locks = createLocks({ backend, namespace: ns })
    const held = [await locks.mutex('pool-1').acquire(), await locks.mutex('pool-2').acquire()]
    const error = await locks
      .mutex('pool-3')
      .tryAcquire()
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect(String((error as Error).message)).toMatch(/pool is exhausted/)
    await held[0]?.release()
    const third = await locks.mutex('pool-3').tryAcquire()
    expect(third).toBeDefined()
    await Promise.all([third?.release(), held[1]?.release()])
    await locks.close()
    await done()
  })
})

describe('mysql for_update fencing connection', () => {
  it('acquires that pin every pool connection at once still draw their tokens (no pool deadlock)', async () => {
    // Four acquires on a pool of four: drawing tokens from the same pool, all four would pin a connection
    // and wait for a fifth one to draw with, until the pool gave up on every one of them.
    const { backend, done } = open('for_update', { connectionLimit: 4 }, 1_500)
    const locks = createLocks({ backend, namespace: ns })
    const settled = await Promise.allSettled(
      Array.from({ length: 4 }, (_, i) => locks.mutex(`fence-pool-${i}`).tryAcquire()),
    )
    const leases = settled.flatMap((r) => (r.status === 'fulfilled' && r.value !== undefined ? [r.value] : []))
    // The backend keeps one connection for tokens, so three of the four fit; the fourth is told the pool is full.
    expect(leases).toHaveLength(3)
    const refused = settled.find((r) => r.status === 'rejected')
    expect((refused as PromiseRejectedResult).reason).toBeInstanceOf(BackendUnavailableError)
    await Promise.all(leases.map((lease) => lease.release()))
    await locks.close()
    await done()
  })
})

describe('mysql get_lock names', () => {
  it('hashes names to 49 characters, so long and case-distinct names are distinct locks', async () => {
    expect(getLockName('x'.repeat(1000))).toHaveLength(49)
    const { backend, done } = open('get_lock')
    const locks = createLocks({ backend, namespace: ns })
    const long = await locks.mutex('L'.repeat(900)).acquire()
    const upper = await locks.mutex('Case').tryAcquire()
    const lower = await locks.mutex('case').tryAcquire()
    expect(upper).toBeDefined()
    expect(lower).toBeDefined()
    await Promise.all([long.release(), upper?.release(), lower?.release()])
    await locks.close()
    await done()
  })
})

async function holderThread(strategy: MysqlStrategy, key: string): Promise<number> {
  const sql =
    strategy === 'get_lock'
      ? 'SELECT IS_USED_LOCK(?) AS id'
      : 'SELECT holder_conn AS id FROM latchkey_fences WHERE lock_key = ?'
  const [rows] = await admin.query(sql, [strategy === 'get_lock' ? getLockName(key) : key])
  const id = Number((rows as { id: unknown }[])[0]?.id)
  if (!Number.isSafeInteger(id) || id <= 0) throw new Error(`no holder connection found for ${key}`)
  return id
}

describe('mysqlBackendFromUrl', () => {
  it('opens the strategy named in the URL on a pool of its own, which close() ends', async () => {
    for (const strategy of ['table', 'get_lock', 'for_update'] as const) {
      const url = new URL(MYSQL_URL)
      url.searchParams.set('strategy', strategy)
      const backend = await mysqlBackendFromUrl(url.toString())
      expect(backend.capabilities.fencing).toBe(strategy === 'get_lock' ? 'none' : 'native')
      const locks = createLocks({ backend, namespace: ns })
      const lease = await locks.mutex(`url-${strategy}`).acquire()
      await lease.release()
      await locks.close()
      await backend.close()
    }
  })
})
