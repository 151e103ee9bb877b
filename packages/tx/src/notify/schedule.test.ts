import { describe, expect, it } from 'vitest'
import { parseDuration, parseSchedule } from './schedule.js'

describe('notify schedule', () => {
  it('reads ms, s, m, h and plain milliseconds', () => {
    expect(parseSchedule(['250ms', '1s', '1.5s', '5m', '1h', 40])).toEqual([250, 1_000, 1_500, 300_000, 3_600_000, 40])
  })

  it('defaults to 1s, 5s, 30s, 5m', () => {
    expect(parseSchedule(undefined)).toEqual([1_000, 5_000, 30_000, 300_000])
  })

  it('refuses typos, negatives, empty schedules and waits past setTimeout', () => {
    expect(() => parseDuration('w', '5 sec')).toThrow(RangeError)
    expect(() => parseDuration('w', '5')).toThrow(/like '250ms'/)
    expect(() => parseDuration('w', -1)).toThrow(RangeError)
    expect(() => parseDuration('w', '30d')).toThrow(RangeError)
    expect(() => parseDuration('w', '600h')).toThrow(/24 days/)
    expect(() => parseDuration('w', null)).toThrow(TypeError)
    expect(() => parseSchedule([])).toThrow(TypeError)
    expect(() => parseSchedule('1s')).toThrow(TypeError)
  })
})
