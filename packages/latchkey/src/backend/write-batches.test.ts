import { describe, expect, it } from 'vitest'
import { MAX_BATCH, turnHolds, writeBatcher } from './write-batches.js'

const endOfTurn = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve))

describe('turnHolds', () => {
  it('holds nothing while nothing is in flight', () => {
    let releases = 0
    const hold = turnHolds(() => releases++)
    expect([hold(0), hold(0), hold(0)]).toEqual(['send', 'send', 'send'])
    expect(releases).toBe(0)
  })

  it("holds a turn's requests once one is in flight, and releases them once, at the end of the turn", async () => {
    let releases = 0
    const hold = turnHolds(() => releases++)
    expect([hold(1), hold(2), hold(3)]).toEqual(['hold', 'hold', 'hold'])
    expect(releases).toBe(0)
    await endOfTurn()
    expect(releases).toBe(1)
    // The next turn starts afresh: nothing in flight, nothing held.
    expect(hold(0)).toBe('send')
  })

  it('says "full" when one more comes after a full batch; that one begins the next batch, which ends with the turn', async () => {
    let releases = 0
    const hold = turnHolds(() => releases++)
    const steps = Array.from({ length: 2 * MAX_BATCH + 1 }, () => hold(1))
    expect(steps.slice(0, MAX_BATCH)).toEqual(Array(MAX_BATCH).fill('hold'))
    expect(steps[MAX_BATCH]).toBe('full')
    expect(steps.slice(MAX_BATCH + 1, 2 * MAX_BATCH)).toEqual(Array(MAX_BATCH - 1).fill('hold'))
    expect(steps[2 * MAX_BATCH]).toBe('full')
    expect(releases).toBe(0)
    await endOfTurn()
    expect(releases).toBe(1)
  })
})

describe('writeBatcher', () => {
  it('corks the socket for the requests of a busy turn and uncorks it once at the end of the turn', async () => {
    const calls: string[] = []
    const socket = { cork: () => calls.push('cork'), uncork: () => calls.push('uncork') }
    let inFlight = 0
    const beforeWrite = writeBatcher(
      () => socket,
      () => inFlight,
    )
    beforeWrite()
    expect(calls).toEqual([])
    inFlight = 1
    beforeWrite()
    beforeWrite()
    expect(calls).toEqual(['cork'])
    await endOfTurn()
    expect(calls).toEqual(['cork', 'uncork'])
  })

  it('writes a full batch at once and keeps the socket corked for the rest of the turn', async () => {
    const calls: string[] = []
    const socket = { cork: () => calls.push('cork'), uncork: () => calls.push('uncork') }
    const beforeWrite = writeBatcher(
      () => socket,
      () => 1,
    )
    for (let i = 0; i <= MAX_BATCH; i++) beforeWrite()
    expect(calls).toEqual(['cork', 'uncork', 'cork'])
    await endOfTurn()
    expect(calls).toEqual(['cork', 'uncork', 'cork', 'uncork'])
  })

  it('leaves a socket it cannot cork, or no socket, as it is', () => {
    expect(() =>
      writeBatcher(
        () => ({}),
        () => 1,
      )(),
    ).not.toThrow()
    expect(() =>
      writeBatcher(
        () => null,
        () => 1,
      )(),
    ).not.toThrow()
  })

  it('uncorks the socket it corked, even when the connection has another socket by the end of the turn', async () => {
    const calls: string[] = []
    const first = { cork: () => calls.push('cork 1'), uncork: () => calls.push('uncork 1') }
    const second = { cork: () => calls.push('cork 2'), uncork: () => calls.push('uncork 2') }
    let current = first
    const beforeWrite = writeBatcher(
      () => current,
      () => 1,
    )
    beforeWrite()
    current = second
    beforeWrite()
    await endOfTurn()
    expect(calls).toEqual(['cork 1', 'uncork 1'])
  })
})
