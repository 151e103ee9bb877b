import { describe, expect, it } from 'vitest'
import type { LockEvent } from '../core/events.js'
import { LockLostError, NotLockHolderError } from '../errors.js'
import { HeldLeases } from './held-leases.js'

const lock = { name: 'a', kind: 'mutex', backend: 'memory' } as const
const acquired = (token: bigint, reentrant = false): LockEvent => ({
  type: 'acquired',
  ...lock,
  token,
  waitedMs: 1,
  reentrant,
})
const released = (token: bigint): LockEvent => ({ type: 'released', ...lock, token, heldMs: 1 })
const lost = (token: bigint, error = new LockLostError('lost', { lockName: 'a' })): LockEvent => ({
  type: 'lost',
  ...lock,
  token,
  error,
})
const releaseFailed = (token: bigint, error: unknown): LockEvent => ({ type: 'release-failed', ...lock, token, error })

/** Applies the events in order; returns the changes and the count left. */
function run(events: LockEvent[]): { changes: unknown[]; size: number } {
  const held = new HeldLeases()
  const changes = events.map((e) => held.update(e))
  return { changes, size: held.size }
}

describe('HeldLeases', () => {
  it('acquired then released: +1 then -1', () => {
    expect(run([acquired(1n), released(1n)])).toEqual({ changes: [1, -1], size: 0 })
  })

  it('reentrant acquisitions count nothing', () => {
    expect(run([acquired(1n), acquired(1n, true), released(1n)])).toEqual({ changes: [1, 0, -1], size: 0 })
  })

  it('lost, then the late release (succeeding or failing) ends the lease once', () => {
    expect(run([acquired(1n), lost(1n), released(1n)])).toEqual({ changes: [1, -1, 0], size: 0 })
    expect(run([acquired(1n), lost(1n), releaseFailed(1n, new Error('down'))])).toEqual({
      changes: [1, -1, 0],
      size: 0,
    })
  })

  it('a release failure reported twice (release, then Locks.close()) is a repeat', () => {
    const error = new Error('down')
    expect(run([acquired(1n), releaseFailed(1n, error), releaseFailed(1n, error)])).toEqual({
      changes: [1, -1, 'repeat'],
      size: 0,
    })
  })

  it('tokens 0n: a lost lease released late does not end a newer live lease of the same name', () => {
    const lostError = new LockLostError('lost', { lockName: 'a' })
    const notHolder = new NotLockHolderError('gone', { lockName: 'a', cause: lostError })
    const events = [acquired(0n), lost(0n, lostError), acquired(0n), releaseFailed(0n, notHolder)]
    expect(run(events)).toEqual({ changes: [1, -1, 1, 0], size: 1 })
  })

  it('never goes below zero on stray ends, and ignores other and unknown events', () => {
    const other = { type: 'demoted', ...lock } as unknown as LockEvent
    const timeout: LockEvent = { type: 'timeout', ...lock, waitedMs: 5 }
    expect(run([released(7n), releaseFailed(7n, 'x'), other, timeout])).toEqual({ changes: [0, 0, 0, 0], size: 0 })
  })

  it('leases of different tokens, kinds and names are counted apart', () => {
    const read = (token: bigint): LockEvent => ({ ...acquired(token), kind: 'read' })
    const events = [acquired(1n), read(2n), read(3n), { ...released(2n), kind: 'read' } as LockEvent]
    expect(run(events)).toEqual({ changes: [1, 1, 1, -1], size: 2 })
  })
})
