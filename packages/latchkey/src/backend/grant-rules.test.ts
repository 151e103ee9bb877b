import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MemoryBackend } from '../backends/memory/memory-backend.js'
import { decideGrant, type HolderState } from './grant-rules.js'
import type { AcquireRequest } from './types.js'

// The grant rules as a whole are checked by the conformance suite's model case (src/testing/cases-model.ts) on
// every backend, and at length on the memory backend by src/testing/grant-model.test.ts.

describe('grant rules: semaphore permits', () => {
  const holder = (owner: string, permits?: number): HolderState => ({
    owner,
    kind: 'semaphore',
    expiresAt: 10,
    delayUntil: 10,
    token: 1n,
    permits,
  })
  const asking = (permits: number): AcquireRequest => ({
    key: 'k',
    kind: 'semaphore',
    owner: 'new',
    ttlMs: 1,
    permits,
    lockDelayMs: 0,
    queue: false,
    queueTtlMs: 1,
  })

  it('reports the count in force to a request of another count, even with permits free', () => {
    expect(decideGrant(asking(5), [holder('a', 1)], [], 0)).toEqual({ grant: false, permitsInForce: 1 })
    expect(decideGrant(asking(1), [holder('a', 5)], [], 0)).toEqual({ grant: false, permitsInForce: 5 })
    expect(decideGrant(asking(5), [holder('a', 5)], [], 0)).toEqual({ grant: true })
    // No holder, or holders that recorded no count (rows of older versions): nothing to compare.
    expect(decideGrant(asking(5), [], [], 0)).toEqual({ grant: true })
    expect(decideGrant(asking(5), [holder('a')], [], 0)).toEqual({ grant: true })
  })

  it('property: holders of one semaphore always share one count and never exceed it', async () => {
    const op = fc.record({
      release: fc.boolean(),
      owner: fc.integer({ min: 0, max: 5 }),
      permits: fc.constantFrom(1, 2, 3),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const backend = new MemoryBackend()
        const held = new Map<string, number>()
        for (const { release, owner, permits } of ops) {
          const ref = { key: 'p', kind: 'semaphore' as const, owner: `o${owner}` }
          if (release) {
            expect(await backend.release(ref)).toBe(held.delete(ref.owner))
          } else if (!held.has(ref.owner)) {
            const r = await backend.tryAcquire({ ...asking(permits), ...ref, ttlMs: 60_000 })
            if (r.acquired) held.set(ref.owner, permits)
            else if (r.permitsInForce !== undefined) expect(r.permitsInForce).not.toBe(permits)
          }
          const counts = new Set(held.values())
          expect(counts.size).toBeLessThanOrEqual(1)
          for (const count of counts) expect(held.size).toBeLessThanOrEqual(count)
        }
      }),
      { numRuns: 300 },
    )
  })
})
