/**
 * A PostgreSQL session terminated while its last reply is still in flight must not crash the process. pg emits
 * 'error' on a client whose connection dies, and an 'error' nobody listens to is thrown as an uncaught exception.
 * pg parses a whole received chunk in one turn, so a reply (the end of a connection handshake, a lock's grant) and
 * the FATAL of `pg_terminate_backend` right behind it reach the client in the same turn: the FATAL's 'error' fires
 * before any code awaiting that reply runs. The proxy below makes that happen on purpose: it holds the server's
 * bytes while the session is terminated, then delivers reply and FATAL as one chunk.
 */
import pg from 'pg'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { postgresBackend } from '../src/backends/postgres/index.js'
import { createLocks, LockLostError } from '../src/index.js'
import { abortedWithin } from '../src/testing/env.js'
import { BatchedReplyProxy } from './support/batched-reply-proxy.js'
import { eventually } from './support/eventually.js'
import { cleanupPostgres, POSTGRES_URL, postgresPool } from './support/sql-backends.js'
import { namespace } from './support/sql-faults.js'

const admin = postgresPool({ max: 2 })
const ns = namespace('lkpt')
const target = new URL(POSTGRES_URL)

afterAll(async () => {
  await cleanupPostgres(ns)
  await admin.end()
})

/** Uncaught exceptions while a test runs (an unhandled 'error' event is one). */
const uncaught: unknown[] = []
const record = (error: unknown): void => void uncaught.push(error)
beforeEach(() => {
  uncaught.length = 0
  process.on('uncaughtException', record)
})
afterEach(() => {
  process.removeListener('uncaughtException', record)
})

/** A pool whose connections go through `proxy`, named so that the test can find its sessions. */
function proxiedPool(proxy: BatchedReplyProxy, applicationName: string): pg.Pool {
  const pool = new pg.Pool({
    host: '127.0.0.1',
    port: proxy.port,
    user: decodeURIComponent(target.username),
    database: target.pathname.slice(1),
    max: 1,
    application_name: applicationName,
  })
  // An idle client dropped by the server is reported here, as an application using pg-pool must listen.
  pool.on('error', () => undefined)
  return pool
}

/** Terminates every session named `applicationName` once `ready` says so; returns their pids. */
async function terminateWhen(applicationName: string, ready = "state = 'idle'"): Promise<number[]> {
  const sql = `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND ${ready}`
  let pids: number[] = []
  await eventually(`a session of ${applicationName} is ready`, async () => {
    pids = (await admin.query<{ pid: number }>(sql, [applicationName])).rows.map((r) => r.pid)
    return pids.length > 0
  })
  for (const pid of pids) await admin.query('SELECT pg_terminate_backend($1)', [pid])
  return pids
}

describe('a PostgreSQL session terminated while its reply is in flight', () => {
  it("advisory: the grant and the FATAL in one chunk raise no uncaught 'error', and the lease is lost at once", async () => {
    const proxy = await new BatchedReplyProxy(Number(target.port || 5432), target.hostname).start()
    const app = `${ns}-grant`
    const pool = proxiedPool(proxy, app)
    const backend = postgresBackend({ pool, strategy: 'advisory' })
    const locks = createLocks({ backend, namespace: ns })
    // One idle client, connected before the replies are held: the acquire's first statement is the lock itself.
    ;(await pool.connect()).release()
    proxy.holdReplies()
    const acquiring = locks.mutex('grant').acquire({ ttlMs: 30_000, waitMs: 10_000 })
    // The grant is held in the proxy; the session, idle again on the server, is terminated behind it.
    await eventually('the grant is held in the proxy', () => proxy.heldBytes > 0)
    await terminateWhen(app)
    await eventually('the server closed the held connection', () => proxy.serverEndedWithHeld === 1)
    proxy.flush()
    const lease = await acquiring
    // The server freed the lock with the session: a 30 s TTL renews every 10 s, so only the connection's death
    // can abort the signal this soon.
    expect(await abortedWithin(lease.signal, 2_000)).toBeInstanceOf(LockLostError)
    expect(uncaught).toEqual([])
    await lease.release().catch(() => undefined)
    await locks.close()
    await backend.close()
    await pool.end()
    await proxy.close()
  })

  it("table: a connection's handshake and the FATAL in one chunk raise no uncaught 'error'; the acquire goes on", async () => {
    const proxy = await new BatchedReplyProxy(Number(target.port || 5432), target.hostname).start()
    const app = `${ns}-handshake`
    const pool = proxiedPool(proxy, app)
    const backend = postgresBackend({ pool, strategy: 'table' })
    const locks = createLocks({ backend, namespace: ns })
    proxy.holdReplies()
    const acquiring = locks.mutex('handshake').acquire({ ttlMs: 5_000, waitMs: 10_000 })
    // The pool's first connection finished its startup on the server (idle, waiting for a query), but the client
    // has not read it: the handshake's end is held in the proxy, then the FATAL joins it.
    await terminateWhen(app)
    await eventually('the server closed the held connection', () => proxy.serverEndedWithHeld === 1)
    proxy.flush()
    // The dead client fails its first statement and is destroyed; the acquire tries again on a new connection.
    const lease = await acquiring
    expect(lease.signal.aborted).toBe(false)
    expect(uncaught).toEqual([])
    await lease.release()
    await locks.close()
    await backend.close()
    await pool.end()
    await proxy.close()
  })
})
