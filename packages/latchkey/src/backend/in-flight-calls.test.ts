import { describe, expect, it } from 'vitest'
import { InFlightCalls } from './in-flight-calls.js'

describe('InFlightCalls', () => {
  it('fails the calls still in, once each, and none that was taken out', () => {
    const calls = new InFlightCalls()
    const failed: string[] = []
    const a = calls.add(() => failed.push('a'))
    const b = calls.add(() => failed.push('b'))
    const c = calls.add(() => failed.push('c'))
    const d = calls.add(() => failed.push('d'))
    // Out from the middle, the head (the newest) and the tail (the oldest).
    expect(calls.remove(b)).toBe(true)
    expect(calls.remove(d)).toBe(true)
    expect(calls.remove(b)).toBe(false)
    calls.failAll(new Error('gone'))
    expect(failed.sort()).toEqual(['a', 'c'])
    // Failed calls are out: an answer that comes after finds nothing to settle, and a second failAll fails nothing.
    expect(calls.remove(a)).toBe(false)
    expect(calls.remove(c)).toBe(false)
    calls.failAll(new Error('again'))
    expect(failed).toHaveLength(2)
    // A removed call keeps no link to the others (the collector keeps nothing through it).
    expect([a.prev, a.next, b.prev, b.next, d.prev, d.next]).toEqual(Array(6).fill(undefined))
  })

  it('a call added while failAll runs (by a failure) is failed too: the list ends empty', () => {
    const calls = new InFlightCalls()
    let later: ReturnType<InFlightCalls['add']> | undefined
    calls.add(() => {
      later = calls.add(() => undefined)
    })
    calls.failAll(new Error('gone'))
    // failAll runs until the list is empty, so a call added by a failure is failed too.
    expect(later?.linked).toBe(false)
  })
})
