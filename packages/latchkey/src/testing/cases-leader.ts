import { expect, it } from 'vitest'
import type { Leader, LeaderRevoked, LeaderTerm } from '../core/leader-types.js'
import type { SuiteEnv } from './env.js'

/** Leader election (`Locks.leader`) over the backend: one leader at a time, hand-over on close, ordered events. */
export function leaderCases(env: SuiteEnv): void {
  it('leader election: 3 participants, one leads at a time; close() hands over with a higher token; events in order', async () => {
    const name = env.uniq('leader')
    const log: string[] = []
    const terms: LeaderTerm[] = []
    let leading = 0
    let maxLeading = 0
    const leaders = ['a', 'b', 'c'].map((id) => {
      // One Locks instance per participant, as in separate processes; a long TTL: hand-overs come from releases.
      const leader = env.locks().leader(name, { id, ttlMs: env.ms(20_000) })
      leader.on('elected', (term: LeaderTerm) => {
        leading++
        maxLeading = Math.max(maxLeading, leading)
        terms.push(term)
        log.push(`${id} elected`)
      })
      leader.on('revoked', (r: LeaderRevoked) => {
        leading--
        log.push(`${id} revoked ${r.reason}`)
      })
      return leader
    })
    const order: Leader[] = []
    for (let round = 0; round < 3; round++) {
      const pending = leaders.filter((l) => !order.includes(l))
      const term = await Promise.race(pending.map((l) => l.elected()))
      const current = pending.find((l) => l.id === term.id) as Leader
      expect(leaders.filter((l) => l.isLeader)).toEqual([current])
      expect(current.token).toBe(term.token)
      expect(current.signal.aborted).toBe(false)
      order.push(current)
      await current.close()
      expect(current.isLeader).toBe(false)
      expect(term.signal.aborted).toBe(true)
    }
    expect(maxLeading).toBe(1)
    expect(log).toEqual(order.flatMap((l) => [`${l.id} elected`, `${l.id} revoked closed`]))
    if (env.capabilities().fencing === 'native') {
      expect(terms[1]?.token).toBeGreaterThan(terms[0]?.token ?? 0n)
      expect(terms[2]?.token).toBeGreaterThan(terms[1]?.token ?? 0n)
    }
    expect(await env.locks().mutex(name).isLocked()).toBe(false)
  }, 60_000)
}
