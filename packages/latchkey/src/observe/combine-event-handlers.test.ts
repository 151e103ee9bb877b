import { describe, expect, it } from 'vitest'
import type { LockEvent } from '../core/events.js'
import { combineEventHandlers } from './combine-event-handlers.js'

const event: LockEvent = { type: 'timeout', name: 'a', kind: 'mutex', backend: 'memory', waitedMs: 3 }

describe('combineEventHandlers', () => {
  it('calls every handler in order, skipping undefined', () => {
    const seen: string[] = []
    const combined = combineEventHandlers(
      (e) => seen.push(`1:${e.type}`),
      undefined,
      (e) => seen.push(`2:${e.type}`),
    )
    combined(event)
    expect(seen).toEqual(['1:timeout', '2:timeout'])
  })

  it('returns a single handler as it is', () => {
    const only = (_: LockEvent) => undefined
    expect(combineEventHandlers(undefined, only)).toBe(only)
  })

  it('a throwing handler does not stop the next; its error is thrown after all ran', () => {
    const seen: string[] = []
    const boom = new Error('boom')
    const combined = combineEventHandlers(
      () => {
        throw boom
      },
      () => seen.push('second'),
    )
    expect(() => combined(event)).toThrow(boom)
    expect(seen).toEqual(['second'])
  })

  it('several throwing handlers: an AggregateError with each error', () => {
    const a = new Error('a')
    const b = new Error('b')
    const combined = combineEventHandlers(
      () => {
        throw a
      },
      () => {
        throw b
      },
    )
    expect(() => combined(event)).toThrow(expect.objectContaining({ name: 'AggregateError', errors: [a, b] }))
  })

  it('no handler at all: a no-op', () => {
    expect(() => combineEventHandlers()(event)).not.toThrow()
  })

  it('rejects a non-function with a TypeError naming its position', () => {
    expect(() => combineEventHandlers(() => undefined, 'log' as never)).toThrow(
      new TypeError('latchkey: combineEventHandlers: handlers[1] must be a function or undefined, got string'),
    )
  })
})
