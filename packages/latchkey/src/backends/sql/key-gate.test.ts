import { describe, expect, it } from 'vitest'
import { KeyGate } from './key-gate.js'

describe('KeyGate', () => {
  it('runs the sections of one key one at a time, in order, and says which queued; other keys run beside', async () => {
    const gate = new KeyGate()
    const log: string[] = []
    let running = 0
    let most = 0
    const section = (name: string) => async (queued: boolean) => {
      running++
      most = Math.max(most, running)
      log.push(`${name}${queued ? ' queued' : ''}`)
      await new Promise((r) => setTimeout(r, 5))
      running--
      return name
    }
    const other = gate.run('b', section('b1'))
    const results = await Promise.all([gate.run('a', section('a1')), gate.run('a', section('a2')), other])
    expect(results).toEqual(['a1', 'a2', 'b1'])
    expect(log).toEqual(['b1', 'a1', 'a2 queued'])
    expect(most).toBe(2)
    expect(gate.size).toBe(0)
  })

  it('a section that throws lets the next one run', async () => {
    const gate = new KeyGate()
    const failed = gate.run('a', async () => {
      throw new Error('boom')
    })
    const next = gate.run('a', async (queued) => queued)
    await expect(failed).rejects.toThrow('boom')
    await expect(next).resolves.toBe(true)
    expect(gate.size).toBe(0)
  })
})
