import { describe, expect, it } from 'vitest'
import { ReadSlabs } from './read-slabs.js'

describe('read slabs', () => {
  it('hands out parts of a slab that no later read overlaps, and a new slab once the rest is under 16 KiB', () => {
    const slabs = new ReadSlabs()
    const first = slabs.next()
    first.fill(1, 0, 100)
    slabs.used(100)
    const second = slabs.next()
    expect(second.buffer).toBe(first.buffer)
    expect(second.byteOffset).toBe(first.byteOffset + 100)
    second.fill(2)
    // What the first read delivered is still there after the second read filled its whole buffer.
    expect(first.subarray(0, 100).every((b) => b === 1)).toBe(true)
    slabs.used(second.length - 16 * 1024 + 1)
    const third = slabs.next()
    expect(third.buffer).not.toBe(first.buffer)
    expect(third.length).toBe(64 * 1024)
  })
})
