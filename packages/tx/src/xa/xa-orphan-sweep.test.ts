import { describe, expect, it } from 'vitest'
import type { TxRecord, TxStatus } from '../types.js'
import { orphanDecision } from './xa-orphan-sweep.js'

const record = (status: TxStatus, parkedFrom: TxStatus | null = null, kind: 'xa' | 'saga' = 'xa') =>
  ({ kind, status, parkedFrom }) as TxRecord

describe('orphanDecision', () => {
  it('finishes a branch as its final (or decided and parked) transaction says', () => {
    expect(orphanDecision(record('succeeded'))).toBe('commit')
    expect(orphanDecision(record('parked', 'submitted'))).toBe('commit')
    expect(orphanDecision(record('failed'))).toBe('rollback')
    expect(orphanDecision(record('parked', 'aborting'))).toBe('rollback')
  })

  it('leaves undecided or driven transactions to their lease holder, and gids this log does not hold', () => {
    expect(orphanDecision(record('prepared'))).toBe('leave')
    expect(orphanDecision(record('submitted'))).toBe('leave')
    expect(orphanDecision(record('aborting'))).toBe('leave')
    expect(orphanDecision(record('parked', 'prepared'))).toBe('leave')
    expect(orphanDecision(undefined)).toBe('leave')
    expect(orphanDecision(record('failed', null, 'saga'))).toBe('leave')
  })
})
