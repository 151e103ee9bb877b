import { describe, expect, it } from 'vitest'
import { StaleTokenError } from '../errors.js'
import { createFenceGuard, fencedUpdate } from './index.js'

describe('fence guard', () => {
  it('admits equal and higher tokens, rejects lower ones atomically per name', async () => {
    const guard = createFenceGuard()
    await guard.admit('acct', 5n)
    await guard.admit('acct', 5n)
    await guard.admit('acct', 7n)
    const error = await guard.admit('acct', 6n).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StaleTokenError)
    expect((error as StaleTokenError).highestSeen).toBe(7n)
    await guard.admit('other', 1n)
    await expect(guard.admit('acct', -1n)).rejects.toBeInstanceOf(TypeError)
    await expect(guard.admit('', 1n)).rejects.toBeInstanceOf(RangeError)
  })

  it('builds fenced UPDATE statements with parameters only', () => {
    const q = fencedUpdate({ table: 'stock', set: { remain: 9 }, where: { id: 1 }, token: 12n })
    expect(q.sql).toBe('UPDATE stock SET remain = ?, fence_token = ? WHERE id = ? AND fence_token <= ?')
    expect(q.params).toEqual([9, 12n, 1, 12n])
    const pg = fencedUpdate({ table: 's.t', set: { a: 1 }, where: {}, token: 1n, column: 'fence', placeholders: '$' })
    expect(pg.sql).toBe('UPDATE s.t SET a = $1, fence = $2 WHERE fence <= $3')
    expect(() => fencedUpdate({ table: 't; drop table x', set: { a: 1 }, where: {}, token: 1n })).toThrow(RangeError)
    expect(() => fencedUpdate({ table: 't', set: {}, where: {}, token: 1n })).toThrow(RangeError)
    expect(() => fencedUpdate({ table: 't', set: { a: 1 }, where: {}, token: 1 as never })).toThrow(TypeError)
  })
})
