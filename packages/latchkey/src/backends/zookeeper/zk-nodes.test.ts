import { describe, expect, it } from 'vitest'
import type { LockKind } from '../../backend/types.js'
import { agreeingLine, encodeSegment, lineOf, nodePrefix, parseNode, standingOf } from './zk-nodes.js'

const line = (...kinds: LockKind[]) =>
  lineOf(kinds.map((kind, i) => `${nodePrefix(`owner-${i}`, kind)}${String(i * 10 + 1).padStart(10, '0')}`).reverse())
const names = (nodes: readonly { owner: string }[]) => nodes.map((n) => n.owner)

describe('zk-nodes', () => {
  it('parses protected names and orders by the sequence suffix only', () => {
    const name = `${nodePrefix('a-b-c', 'write')}0000000042`
    expect(parseNode(name)).toEqual({ name, owner: 'a-b-c', kind: 'write', order: '0000000042', permits: undefined })
    expect(parseNode('lock-0000000001')).toBeUndefined()
    expect(names(lineOf([`${nodePrefix('z', 'mutex')}0000000002`, `${nodePrefix('a', 'mutex')}0000000003`]))).toEqual([
      'z',
      'a',
    ])
  })

  it('encodes any key into one safe path segment', () => {
    expect(encodeSegment('ns:a/b..c*')).toBe('ns%3Aa%2Fb%2E%2Ec%2A')
    expect(encodeSegment('.')).not.toBe('.')
  })

  it('exclusive kinds: only the first holds; a waiter watches its predecessor; only the first waiter checks holders', () => {
    const l = line('mutex', 'fair', 'write')
    expect(standingOf(l, 0, 1).eligible).toBe(true)
    const second = standingOf(l, 1, 1)
    expect(second.eligible).toBe(false)
    expect(names(second.watch)).toEqual(['owner-0'])
    expect(names(second.blockers)).toEqual(['owner-0'])
    const third = standingOf(l, 2, 1)
    expect(names(third.watch)).toEqual(['owner-1'])
    expect(third.blockers).toEqual([])
  })

  it('readers share, wait only for earlier writers (held or waiting), and watch the nearest one', () => {
    const l = line('read', 'read', 'write', 'read', 'read')
    expect(standingOf(l, 1, 1).eligible).toBe(true)
    const writer = standingOf(l, 2, 1)
    expect(writer.eligible).toBe(false)
    expect(names(writer.blockers)).toEqual(['owner-0', 'owner-1'])
    const late = standingOf(l, 4, 1)
    expect(late.eligible).toBe(false)
    expect(names(late.watch)).toEqual(['owner-2'])
    expect(late.blockers).toEqual([]) // the waiting writer is not a holder whose lease could expire
  })

  it('semaphore: the first `permits` hold; the first waiter watches every holder, later ones their predecessor', () => {
    const l = line('semaphore', 'semaphore', 'semaphore', 'semaphore')
    expect(standingOf(l, 1, 2).eligible).toBe(true)
    const first = standingOf(l, 2, 2)
    expect(names(first.watch)).toEqual(['owner-0', 'owner-1'])
    expect(first.wakeOnChange).toBe(false)
    const next = standingOf(l, 3, 2)
    expect(names(next.watch)).toEqual(['owner-2'])
    expect(next.wakeOnChange).toBe(true)
  })

  it('semaphore nodes name their permits: the first count in line is in force, nodes of another count hold nothing', () => {
    const seq = (i: number) => String(i).padStart(10, '0')
    const legacy = `${nodePrefix('o', 'semaphore')}${seq(1)}`
    const a = `${nodePrefix('a-1', 'semaphore', 1)}${seq(2)}`
    const b = `${nodePrefix('b-5', 'semaphore', 5)}${seq(3)}`
    const c = `${nodePrefix('c', 'semaphore', 1)}${seq(4)}`
    expect(parseNode(a)).toEqual({ name: a, owner: 'a-1', kind: 'semaphore', order: seq(2), permits: 1 })
    expect(parseNode(legacy)?.permits).toBeUndefined()
    const { inForce, line: agreeing } = agreeingLine(lineOf([c, b, a, legacy]))
    expect(inForce).toBe(1)
    expect(names(agreeing)).toEqual(['o', 'a-1', 'c'])
    // b (5) would be eligible at index 2 of the raw line; among the agreeing nodes, c is the first waiter.
    expect(standingOf(agreeing, 2, 2).eligible).toBe(false)
    expect(names(standingOf(agreeing, 2, 2).watch)).toEqual(['o', 'a-1'])
  })

  it('children it cannot parse (another client, kazoo, a hand-made node) are exclusive holders in sequence order', () => {
    const seq = (i: number) => String(i).padStart(10, '0')
    const kazoo = `0f1e2d3c4b5a__lock__${seq(1)}`
    const l = lineOf([`${nodePrefix('w', 'mutex')}${seq(2)}`, kazoo, `${nodePrefix('r', 'read')}${seq(3)}`])
    expect(l.map((n) => n.name)).toEqual([
      kazoo,
      `${nodePrefix('w', 'mutex')}${seq(2)}`,
      `${nodePrefix('r', 'read')}${seq(3)}`,
    ])
    expect(standingOf(l, 0, 1).eligible).toBe(true)
    expect(standingOf(l, 1, 1).eligible).toBe(false)
    expect(names(standingOf(l, 1, 1).watch)).toEqual([''])
    expect(standingOf(l, 2, 1).eligible).toBe(false)
    // A semaphore shares nothing with an exclusive holder ahead of it, however many permits it has.
    const sem = lineOf([`${nodePrefix('s', 'semaphore', 5)}${seq(3)}`, `foreign-${seq(2)}`])
    expect(standingOf(sem, 1, 5).eligible).toBe(false)
    expect(sem[1]?.name).toBe(`${nodePrefix('s', 'semaphore', 5)}${seq(3)}`)
    // A child without a sequence number has no place in line: it stands first, ahead of everyone, until deleted.
    const stray = lineOf([`${nodePrefix('m', 'mutex')}${seq(1)}`, 'stray'])
    expect(stray.map((n) => n.name)).toEqual(['stray', `${nodePrefix('m', 'mutex')}${seq(1)}`])
    expect(standingOf(stray, 1, 1).eligible).toBe(false)
  })
})
