import { describe, expect, it } from 'vitest'
import { backoffMs, sleep } from './backoff.js'

describe('backoff', () => {
  const policy = { firstMs: 100, maxMs: 1_000, attempts: 5 }

  it('doubles from firstMs, caps at maxMs, and jitters within the upper half', () => {
    expect([1, 2, 3, 4, 5, 50].map((a) => backoffMs(a, policy, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000])
    expect([1, 2, 3, 4, 5].map((a) => backoffMs(a, policy, () => 0))).toEqual([50, 100, 200, 400, 500])
  })

  it('sleep rejects with the abort reason at once', async () => {
    const ac = new AbortController()
    const pending = sleep(60_000, ac.signal)
    ac.abort(new Error('closing'))
    await expect(pending).rejects.toThrow('closing')
    await expect(sleep(1, AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone')
    await sleep(1, new AbortController().signal)
  })
})
