import { describe, expect, it } from 'vitest'
import { holderFromRow, inspectionKind, lockKeysOf, summariesOf, waitersFromRows } from './inspection.js'

describe('inspection helpers', () => {
  it("the kind is an exclusive holder's, else the first holder's, else the first waiter's", () => {
    expect(
      inspectionKind(
        [
          { owner: 'a', kind: 'read' },
          { owner: 'b', kind: 'write' },
        ],
        [],
      ),
    ).toBe('write')
    expect(inspectionKind([{ owner: 'a', kind: 'read' }], [{ owner: 'w', kind: 'write' }])).toBe('read')
    expect(inspectionKind([], [{ owner: 'w', kind: 'fair' }])).toBe('fair')
    expect(inspectionKind([], [])).toBeUndefined()
  })

  it('state keys map back to lock keys: the semaphore suffix dropped, prefix kept, sorted, once each', () => {
    const keys = ['ns:b', 'ns:a\u0000semaphore', 'ns:a', 'other:c', 'ns:c\u0000semaphore']
    expect(lockKeysOf(keys, { prefix: 'ns:', limit: 10 })).toEqual(['ns:a', 'ns:b', 'ns:c'])
  })

  it('rows become holders (token bigint, semaphore permits only) and waiters in line order', () => {
    expect(holderFromRow({ owner: 'o', kind: 'semaphore', expiresAt: '5', token: '7', permits: '3' })).toEqual({
      owner: 'o',
      kind: 'semaphore',
      token: 7n,
      expiresAt: 5,
      permits: 3,
    })
    expect(holderFromRow({ owner: 'o', kind: 'mutex', expiresAt: 5, token: 7n, permits: 0 })).toEqual({
      owner: 'o',
      kind: 'mutex',
      token: 7n,
      expiresAt: 5,
    })
    expect(
      waitersFromRows([
        { owner: 'late', kind: 'write', seq: '12' },
        { owner: 'early', kind: 'fair', seq: 3 },
      ]),
    ).toEqual([
      { owner: 'early', kind: 'fair' },
      { owner: 'late', kind: 'write' },
    ])
  })

  it('summaries skip locks nobody holds or waits on any more, and stop at the limit', async () => {
    const keys = Array.from({ length: 50 }, (_, i) => `k${String(i).padStart(2, '0')}`)
    const inspected: string[] = []
    const found = await summariesOf(keys, 3, async (key) => {
      inspected.push(key)
      const held = Number(key.slice(1)) % 2 === 1
      return {
        name: key,
        kind: held ? 'mutex' : undefined,
        holders: held ? [{ owner: 'x', kind: 'mutex' }] : [],
        waiters: [],
      }
    })
    expect(found.map((s) => s.name)).toEqual(['k01', 'k03', 'k05'])
    expect(inspected.length).toBeLessThan(keys.length)
  })
})
