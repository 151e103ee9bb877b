/**
 * PostgreSQL specifics: 200 concurrent acquirers without a deadlock, terminated backends (a lost lease for
 * the advisory strategy; nothing for the table strategy, whose listening client comes back by itself), an
 * exhausted pool, and release wake-ups through LISTEN/NOTIFY.
 */
import { describe, expect, it } from 'vitest'
import type { AcquireRequest, Backend } from '../src/backend/types.js'
import { advisoryKey, postgresBackend, postgresBackendFromUrl } from '../src/backends/postgres/index.js'
import { createLocks, LockLostError, NotLockHolderError } from '../src/index.js'
import { abortedWithin } from '../src/testing/env.js'
import { eventually } from './support/eventually.js'
import { cleanupPostgres, POSTGRES_URL, postgresPool } from './support/sql-backends.js'
import {
  exhaustedPoolCase,
  faultNamespace,
  fromUrlCase,
  openerOf,
  tableContentionCases,
} from './support/sql-fault-cases.js'

const admin = postgresPool({ max: 2 })
const ns = faultNamespace('lkp', cleanupPostgres, admin)
const { open, on: openOn } = openerOf(postgresPool, postgresBackend, (size) => ({ max: size }))

/** Server pids of this pool's sessions (application_name marks them). */
async function pidsOf(applicationName: string, query?: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND ($2::text IS NULL OR query LIKE $2)',
    [applicationName, query ?? null],
  )
  return rows.map((r) => r.pid)
}

async function terminate(pids: number[]): Promise<void> {
  for (const pid of pids) await admin.query('SELECT pg_terminate_backend($1)', [pid])
}

describe('postgres table strategy', () => {
  tableContentionCases(openOn('table'), ns)

  it('survives terminated pool clients and a terminated listener: the lease holds, waiters are still woken', async () => {
    const app = `latchkey-faults-${ns}`
    const { backend, done } = open('table', { max: 4, application_name: app })
    const locks = createLocks({ backend, namespace: ns })
    // The listener wakes every subscription when its LISTEN is in place and when it notices its client died
    // (a release may have been missed in between): this first subscription, which starts the listener, tells
    // the test when each has happened.
    const listening = backend.subscribe?.({ key: `${ns}:terminated`, kind: 'mutex' }, 'probe')
    // Rejects with a TimeoutError if the wake-up does not come within 5 s.
    const woken = () => listening?.wait(60_000, AbortSignal.timeout(5_000))
    await woken()
    const lease = await locks.mutex('terminated').acquire({ ttlMs: 5_000 })
    const before = await pidsOf(app)
    expect(before.length).toBeGreaterThan(0)
    await terminate(before)
    await woken()
    // It listens again by itself, on a new session, while anyone is subscribed.
    await woken()
    const listener = await pidsOf(app, 'LISTEN%')
    expect(listener).toHaveLength(1)
    expect(before).not.toContain(listener[0])
    listening?.close()
    expect(lease.signal.aborted).toBe(false)
    await lease.extend()
    // A waiter is woken by the release's NOTIFY, well before its fallback poll (2 s; the lease has 5 s left).
    let refused = 0
    const counting: Backend = Object.assign(Object.create(backend) as Backend, {
      tryAcquire: async (request: AcquireRequest) => {
        const result = await backend.tryAcquire(request)
        if (!result.acquired) refused++
        return result
      },
    })
    const waiter = createLocks({ backend: counting, namespace: ns }).mutex('terminated').acquire({ waitMs: 10_000 })
    await eventually('the waiter found the lock taken', () => refused > 0)
    const started = performance.now()
    await lease.release()
    const next = await waiter
    expect(performance.now() - started).toBeLessThan(1_500)
    await next.release()
    await locks.close()
    await done()
  })
})

describe('postgres advisory strategy', () => {
  it('pg_terminate_backend of the pinned client aborts lease.signal with LockLostError at once, not at the next renewal', async () => {
    const { backend, done } = open('advisory')
    const locks = createLocks({ backend, namespace: ns })
    // A 30 s TTL renews every 10 s: only the connection's end can tell the holder within the 2 s below.
    const lease = await locks.mutex('kill').acquire({ ttlMs: 30_000 })
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

  exhaustedPoolCase(openOn('advisory'), 2, ns)
})

describe('postgresBackendFromUrl', () => {
  fromUrlCase(
    postgresBackendFromUrl,
    POSTGRES_URL,
    ['table', 'advisory'],
    (backend, strategy) => expect(backend.capabilities.notifications).toBe(strategy === 'table' ? 'global' : 'process'),
    ns,
  )
})
