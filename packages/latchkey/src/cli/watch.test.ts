import { describe, expect, it } from 'vitest'
import { quantile } from './bench.js'
import { inspectText, remaining } from './format.js'
import { changes, changeText } from './watch.js'

describe('latchkey watch and formatting', () => {
  it('reports holders and waiters that appear and go', () => {
    const before = {
      name: 'x',
      kind: 'mutex' as const,
      holders: [{ owner: 'a', kind: 'mutex' as const, token: 1n, expiresAt: 5_000 }],
      waiters: [{ owner: 'b', kind: 'mutex' as const }],
    }
    const after = {
      name: 'x',
      kind: 'mutex' as const,
      holders: [{ owner: 'b', kind: 'mutex' as const, token: 2n, expiresAt: 9_000 }],
      waiters: [],
    }
    expect(changes(undefined, before, 1_000).map((c) => c.change)).toEqual(['held', 'waiting'])
    expect(changes(before, before, 1_000)).toEqual([])
    const c = changes(before, after, 1_000)
    expect(c.map((e) => `${e.change} ${e.owner}`)).toEqual(['released a', 'stopped waiting b', 'held b'])
    expect(changeText(c[2] as (typeof c)[number])).toMatch(/held +mutex +b token 2 expires in 8\.0s$/)
  })

  it('quantiles by nearest rank; remaining time; an inspection as text', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1)
    expect([quantile(sorted, 0.5), quantile(sorted, 0.99), quantile([], 0.5)]).toEqual([50, 99, 0])
    expect([remaining(undefined, 0), remaining(12_400, 0), remaining(1_250, 0)]).toEqual(['-', '12s', '1.3s'])
    expect(inspectText({ name: 'n', kind: undefined, holders: [], waiters: [] })).toBe(
      'lock "n": free\nholders: none\nwaiters: none',
    )
  })
})
