import { describe, expect, it } from 'vitest'
import { ChurnMap } from './churn-map.js'

describe('ChurnMap', () => {
  it('counts its entries, finds them by id, and walks a copy', () => {
    const map = new ChurnMap<number, string>()
    map.set(1, 'a')
    map.set(3, 'b')
    map.set(5, 'c')
    map.set(1, 'A') // again: replaced, still three
    expect(map.size).toBe(3)
    expect(map.get(1)).toBe('A')
    expect(map.delete(3)).toBe(true)
    expect(map.delete(3)).toBe(false)
    expect(map.delete(7)).toBe(false)
    expect(map.size).toBe(2)
    expect(map.get(3)).toBeUndefined()
    // Deleting while walking what values() gave leaves the walk whole.
    const walked: string[] = []
    for (const v of map.values()) {
      walked.push(v)
      map.delete(v === 'A' ? 1 : 5)
    }
    expect(walked.sort()).toEqual(['A', 'c'])
    expect(map.size).toBe(0)
  })
})
