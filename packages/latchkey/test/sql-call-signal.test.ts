/**
 * The SQL backends honour `CallOptions.signal`: a try the core has abandoned at its deadline takes no server lock
 * (which the core would only have to release again) and hands its pool connection back.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import type { AcquireRequest, Backend } from '../src/backend/types.js'
import { cleanupMysql, cleanupPostgres, mysqlWithPool, postgresWithPool } from './support/sql-backends.js'

const namespace = `lk-signal-${randomUUID().slice(0, 8)}`
const strategies: [string, () => Backend, (ns: string) => Promise<void>][] = [
  ['mysql table', () => mysqlWithPool('table'), cleanupMysql],
  ['mysql get_lock', () => mysqlWithPool('get_lock'), cleanupMysql],
  ['mysql for_update', () => mysqlWithPool('for_update'), cleanupMysql],
  ['postgres table', () => postgresWithPool('table'), cleanupPostgres],
  ['postgres advisory', () => postgresWithPool('advisory'), cleanupPostgres],
]

describe.each(strategies)('%s: an abandoned try', (label, make, cleanup) => {
  const backend = make()
  afterAll(async () => {
    await backend.close()
    await cleanup(namespace)
  })

  it('rejects with the signal reason, takes nothing, and the next try is granted', async () => {
    const request: AcquireRequest = {
      key: `${namespace}:${label.replace(' ', '-')}`,
      kind: 'mutex',
      owner: randomUUID(),
      ttlMs: 5_000,
      permits: 1,
      lockDelayMs: 0,
      queue: false,
      queueTtlMs: 0,
    }
    const reason = new Error('abandoned by the core')
    await expect(backend.tryAcquire(request, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    expect(await backend.isLocked({ ...request, permits: 1 })).toBe(false)
    const granted = await backend.tryAcquire({ ...request, owner: randomUUID() })
    expect(granted.acquired).toBe(true)
    await backend.forceRelease(request)
  })
})
