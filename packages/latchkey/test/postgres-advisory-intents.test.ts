/**
 * The advisory strategy's writer intents: a waiting writer holds a shared "intent" lock that keeps new readers
 * out. Once that writer is granted (or leaves), the intent must be gone before the call returns: freed only by
 * destroying its connection, it lingered until the server noticed the disconnect, and a reader asking right then
 * was refused on a free lock (found by the grant-rules model test: 22 rounds in 60 refused, for 0.5-34 ms).
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import type { AcquireRequest, AcquireResult, Backend } from '../src/backend/types.js'
import { createLocks } from '../src/index.js'
import { eventually } from '../src/testing/index.js'
import { postgresWithPool } from './support/sql-backends.js'

/** Counts the tries the backend refused, so the test knows a waiter has registered its intent. */
function refusals(backend: Backend): { backend: Backend; refused: () => number } {
  let refused = 0
  const wrapped = Object.create(backend) as Backend
  wrapped.tryAcquire = async (request: AcquireRequest): Promise<AcquireResult> => {
    const result = await backend.tryAcquire(request)
    if (!result.acquired) refused++
    return result
  }
  return { backend: wrapped, refused: () => refused }
}

describe('postgres advisory writer intents', () => {
  const inner = postgresWithPool('advisory')
  afterAll(() => inner.close())

  it('a reader is granted at once after a waiting writer was granted and released', async () => {
    const { backend, refused } = refusals(inner)
    const locks = createLocks({ backend, namespace: `intents-${randomUUID()}` })
    try {
      for (let round = 0; round < 20; round++) {
        const rw = locks.readWrite(`r${round}`)
        const first = await rw.write.acquire()
        const before = refused()
        const waiting = rw.write.acquire({ waitMs: 10_000 })
        // The waiter's refused try returns only after its intent is held.
        await eventually('the waiting writer was refused once', () => refused() > before)
        await first.release()
        await (await waiting).release()
        const reader = await rw.read.tryAcquire()
        expect(reader, `round ${round}: a reader on a free lock`).toBeDefined()
        await reader?.release()
      }
    } finally {
      await locks.close()
    }
  })

  it('a reader is granted at once after a waiting writer gave up', async () => {
    const { backend, refused } = refusals(inner)
    const locks = createLocks({ backend, namespace: `intents-${randomUUID()}` })
    try {
      for (let round = 0; round < 20; round++) {
        const rw = locks.readWrite(`l${round}`)
        const first = await rw.write.acquire()
        const before = refused()
        const stop = new AbortController()
        const waiting = rw.write.acquire({ waitMs: 10_000, signal: stop.signal }).catch((e: unknown) => e)
        await eventually('the waiting writer was refused once', () => refused() > before)
        stop.abort(new Error('gave up'))
        expect(await waiting).toBeInstanceOf(Error)
        await first.release()
        const reader = await rw.read.tryAcquire()
        expect(reader, `round ${round}: a reader on a free lock`).toBeDefined()
        await reader?.release()
      }
    } finally {
      await locks.close()
    }
  })
})
