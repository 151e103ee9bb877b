/**
 * MySQL / MariaDB specifics: 200 concurrent acquirers without a deadlock, killed connections (a lost lease
 * for the session strategies, nothing for the table strategy), an exhausted pool, the FOUND_ROWS flag,
 * hashed GET_LOCK names and fencing counters that survive deleted rows.
 */
import { describe, expect, it } from 'vitest'
import { getLockName, type MysqlStrategy, mysqlBackend, mysqlBackendFromUrl } from '../src/backends/mysql/index.js'
import {
  BackendUnavailableError,
  createLocks,
  type LockEvent,
  LockLostError,
  NotLockHolderError,
} from '../src/index.js'
import { abortedWithin } from '../src/testing/env.js'
import { eventually } from './support/eventually.js'
import { cleanupMysql, MYSQL_URL, mysqlPool } from './support/sql-backends.js'
import {
  exhaustedPoolCase,
  faultNamespace,
  fromUrlCase,
  openerOf,
  tableContentionCases,
} from './support/sql-fault-cases.js'
import { idsOf } from './support/sql-faults.js'

const admin = mysqlPool({ connectionLimit: 2 })
const ns = faultNamespace('lkm', cleanupMysql, admin)
const { open, on: openOn } = openerOf(mysqlPool, mysqlBackend, (size) => ({ connectionLimit: size }))

async function kill(threadId: number): Promise<void> {
  await admin.query('KILL CONNECTION ?', [threadId])
}

describe('mysql table strategy', () => {
  // Polls stay short: 200 waiters on one lock learn of a release from another Locks instance only by polling.
  tableContentionCases(openOn('table'), ns, { maxPollMs: 500 })

  it('survives killed pool connections: the lease stays held, renews, releases', async () => {
    const { pool, backend, done } = open('table', { connectionLimit: 3 })
    let renewals = 0
    const onEvent = (e: LockEvent): void => void (e.type === 'renewed' && renewals++)
    const locks = createLocks({ backend, namespace: ns, onEvent })
    const lease = await locks.mutex('killed-pool').acquire({ ttlMs: 600 })
    for (const id of await idsOf(pool)) await kill(id)
    const killedAt = renewals
    // Two watchdog renewals after the kills ran on new connections: the lease outlived every one it used.
    await eventually('two renewals after the kills', () => renewals >= killedAt + 2, 5_000)
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
  it('KILL of the pinned connection aborts lease.signal with LockLostError at once, not at the next renewal', async () => {
    const { backend, done } = open(strategy)
    const locks = createLocks({ backend, namespace: ns })
    // A 30 s TTL renews every 10 s: only the connection's end can tell the holder within the 2 s below. Without
    // it, a holder whose server died wrote for up to a third of its TTL after the server had freed its lock.
    const lease = await locks.mutex(`kill-${strategy}`).acquire({ ttlMs: 30_000 })
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

  // Each held lock pins one connection; for_update also needs a second one for a moment, to draw its token.
  exhaustedPoolCase(openOn(strategy), strategy === 'get_lock' ? 2 : 3, ns)
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
  fromUrlCase(
    mysqlBackendFromUrl,
    MYSQL_URL,
    ['table', 'get_lock', 'for_update'],
    (backend, strategy) => expect(backend.capabilities.fencing).toBe(strategy === 'get_lock' ? 'none' : 'native'),
    ns,
  )
})
