/**
 * PostgreSQL specifics: 200 concurrent acquirers without a deadlock, terminated backends (a lost lease for
 * the advisory strategy; nothing for the table strategy, whose listening client comes back by itself), an
 * exhausted pool, and release wake-ups through LISTEN/NOTIFY.
 */
import type pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import {
  advisoryKey,
  type PostgresStrategy,
  postgresBackend,
  postgresBackendFromUrl,
} from '../src/backends/postgres/index.js'
import {
  BackendUnavailableError,
  createLocks,
  type LockEvent,
  LockLostError,
  NotLockHolderError,
} from '../src/index.js'
import { cleanupPostgres, POSTGRES_URL, postgresPool } from './support/sql-backends.js'
import { abortedWithin, delay, namespace } from './support/sql-faults.js'

const ns = namespace('lkp')
const admin = postgresPool({ max: 2 })
afterAll(async () => {
  await cleanupPostgres(ns)
  await admin.end()
})

function open(strategy: PostgresStrategy, poolOptions: pg.PoolConfig = {}, connectTimeoutMs?: number) {
  const pool = postgresPool(poolOptions)
  const backend = postgresBackend({ pool, strategy, ...(connectTimeoutMs ? { connectTimeoutMs } : {}) })
  return {
    pool,
    backend,
    done: async () => {
      await backend.close()
      await pool.end()
    },
  }
}

/** Server pids of this pool's sessions (application_name marks them). */
async function pidsOf(applicationName: string, query?: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND ($2::text IS NULL OR query LIKE $2)',
    [applicationName, query ?? null],
  )
  return rows.map((r) => r.pid)
}

const POOL_20 = { max: 20 }

async function terminate(pids: number[]): Promise<void> {
  for (const pid of pids) await admin.query('SELECT pg_terminate_backend($1)', [pid])
}

describe('postgres table strategy', () => {
  it('200 concurrent acquirers on one lock: exact counter, no deadlock or any other backend error', async () => {
    const { backend, done } = open('table', POOL_20)
    const errors: unknown[] = []
    const onEvent = (e: LockEvent): void => void (e.type === 'backend-error' && errors.push(e.error))
    const instances = Array.from({ length: 10 }, () => createLocks({ backend, namespace: ns, onEvent }))
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

  it('survives terminated pool clients and a terminated listener: the lease holds, waiters are still woken', async () => {
    const app = `latchkey-faults-${ns}`
    const { backend, done } = open('table', { max: 4, application_name: app })
    const locks = createLocks({ backend, namespace: ns })
    const lease = await locks.mutex('terminated').acquire({ ttlMs: 5_000 })
    // Open the listener, then terminate every session of the pool (the listener included).
    const probe = locks
      .mutex('terminated')
      .acquire({ waitMs: 50 })
      .catch(() => undefined)
    await probe
    const before = await pidsOf(app)
    expect(before.length).toBeGreaterThan(0)
    await terminate(before)
    await delay(1_200)
    expect(lease.signal.aborted).toBe(false)
    await lease.extend()
    // A waiter is woken by the release's NOTIFY, well before its fallback poll (2 s; the lease has 5 s left).
    const started = performance.now()
    const waiter = createLocks({ backend, namespace: ns }).mutex('terminated').acquire({ waitMs: 10_000 })
    await delay(200)
    // The waiter's subscription brought a new listening session up (the old one was terminated).
    expect(await pidsOf(app, 'LISTEN%')).toHaveLength(1)
    expect(before).not.toContain((await pidsOf(app, 'LISTEN%'))[0])
    await lease.release()
    const next = await waiter
    expect(performance.now() - started).toBeLessThan(1_500)
    await next.release()
    await locks.close()
    await done()
  })
})

describe('postgres advisory strategy', () => {
  it('pg_terminate_backend of the pinned client aborts lease.signal with LockLostError', async () => {
    const { backend, done } = open('advisory')
    const locks = createLocks({ backend, namespace: ns })
    const lease = await locks.mutex('kill').acquire({ ttlMs: 900 })
    const k = BigInt.asUintN(64, advisoryKey(`${ns}:kill`))
    const { rows } = await admin.query<{ pid: number }>(
      "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1::oid AND objid = $2::oid",
      [(k >> 32n).toString(), (k & 0xffffffffn).toString()],
    )
    expect(rows).toHaveLength(1)
    await terminate(rows.map((r) => r.pid))
    expect(await abortedWithin(lease.signal, 2_000)).toBeInstanceOf(LockLostError)
    await expect(lease.release()).rejects.toBeInstanceOf(NotLockHolderError)
    const next = await createLocks({ backend, namespace: ns }).mutex('kill').acquire({ waitMs: 2_000 })
    await next.release()
    await locks.close()
    await done()
  })

  it('an exhausted pool fails fast with BackendUnavailableError instead of hanging', async () => {
    const { backend, done } = open('advisory', { max: 2 }, 300)
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

describe('postgresBackendFromUrl', () => {
  it('opens the strategy named in the URL on a pool of its own, which close() ends', async () => {
    for (const strategy of ['table', 'advisory'] as const) {
      const url = new URL(POSTGRES_URL)
      url.searchParams.set('strategy', strategy)
      const backend = await postgresBackendFromUrl(url.toString())
      expect(backend.capabilities.notifications).toBe(strategy === 'table' ? 'global' : 'process')
      const locks = createLocks({ backend, namespace: ns })
      const lease = await locks.mutex(`url-${strategy}`).acquire()
      await lease.release()
      await locks.close()
      await backend.close()
    }
  })
})
