import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MemoryBackend } from '../backends/memory/memory-backend.js'
import type { LockKind } from './types.js'

const KINDS: LockKind[] = ['mutex', 'fair', 'read', 'write']

/**
 * Model-based property: any interleaving of tryAcquire / release / leaveQueue over one lock name never yields
 * two holders where the rules forbid it, and tokens only grow. Time is frozen, so nothing expires.
 */
describe('grant rules (property)', () => {
  it('never grants an exclusive lock beside another holder, nor more semaphore permits than allowed', async () => {
    const op = fc.record({
      action: fc.constantFrom('acquire', 'queue', 'release', 'leave'),
      owner: fc.integer({ min: 0, max: 5 }),
      kind: fc.constantFrom(...KINDS),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), fc.boolean(), async (ops, semaphore) => {
        const backend = new MemoryBackend()
        const held = new Map<string, LockKind>()
        let lastToken = 0n
        for (const { action, owner, kind: k } of ops) {
          const kind: LockKind = semaphore ? 'semaphore' : k
          const ref = { key: 'p', kind, owner: `o${owner}` }
          if (action === 'acquire' || action === 'queue') {
            if (held.has(ref.owner)) continue
            const r = await backend.tryAcquire({
              ...ref,
              ttlMs: 60_000,
              permits: 2,
              lockDelayMs: 0,
              queue: action === 'queue',
              queueTtlMs: 60_000,
            })
            if (r.acquired) {
              expect(r.token > lastToken).toBe(true)
              lastToken = r.token
              held.set(ref.owner, kind)
            }
          } else if (action === 'release') {
            const kindHeld = held.get(ref.owner)
            const ok = await backend.release({ ...ref, kind: kindHeld ?? kind })
            expect(ok).toBe(kindHeld !== undefined)
            held.delete(ref.owner)
          } else {
            await backend.leaveQueue(ref)
          }
          const kinds = [...held.values()]
          if (semaphore) expect(kinds.length).toBeLessThanOrEqual(2)
          else if (kinds.some((x) => x !== 'read')) expect(kinds).toHaveLength(1)
        }
      }),
      { numRuns: 300 },
    )
  })
})
