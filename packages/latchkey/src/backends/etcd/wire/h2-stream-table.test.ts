import { describe, expect, it } from 'vitest'
import { H2Stream } from './h2-stream.js'
import { H2StreamTable } from './h2-stream-table.js'

const handler = { headers: () => undefined, data: () => undefined, closed: () => undefined }

describe('H2StreamTable', () => {
  it('counts the open streams, finds them by id, and walks a copy', () => {
    const table = new H2StreamTable()
    const streams = [1, 3, 5].map((id) => new H2Stream(id, handler as never, 65_535))
    for (const s of streams) table.set(s)
    table.set(streams[0] as H2Stream) // again: still three
    expect(table.size).toBe(3)
    expect(table.get(3)).toBe(streams[1])
    table.delete(3)
    table.delete(3)
    table.delete(7)
    expect(table.size).toBe(2)
    expect(table.get(3)).toBeUndefined()
    // Deleting while walking what values() gave leaves the walk whole.
    const walked: number[] = []
    for (const s of table.values()) {
      walked.push(s.id)
      table.delete(s.id)
    }
    expect(walked.sort()).toEqual([1, 5])
    expect(table.size).toBe(0)
  })
})
