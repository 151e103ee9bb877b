import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MemoryBackend } from '../backends/memory/memory-backend.js'
import { decideGrant, type HolderState } from './grant-rules.js'
import type { AcquireRequest, LockKind } from './types.js'

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
