import { describe, expect, it } from 'vitest'
import { MemoryBackend } from './memory-backend.js'

describe('memory backend housekeeping', () => {
  it('sweeps the state of locks that expired unreleased and were never touched again', async () => {
    const backend = new MemoryBackend()
    const base = { kind: 'mutex' as const, permits: 1, lockDelayMs: 0, queue: false, queueTtlMs: 1_000 }
    await backend.tryAcquire({ ...base, key: 'abandoned', owner: 'a', ttlMs: 1 })
    // The duration under test: past the 1 ms TTL, so the entry is expired and unreleased.
    await new Promise((r) => setTimeout(r, 5))
    for (let i = 0; i < 10_000; i++) {
      const owner = `o${i}`
      expect((await backend.tryAcquire({ ...base, key: 'busy', owner, ttlMs: 60_000 })).acquired).toBe(true)
      // The grant that triggers the sweep must survive it.
      expect(await backend.isLocked({ key: 'busy', kind: 'mutex', permits: 1 })).toBe(true)
      expect(await backend.release({ key: 'busy', kind: 'mutex', owner })).toBe(true)
    }
    expect(await backend.forceRelease({ key: 'abandoned', kind: 'mutex' })).toBe(false)
  })
})
