import { describe, expect, it } from 'vitest'
import { latchkeyLayout, redissonLayout } from './key-layout.js'
import { holdersFrom, type InspectReply, lockKeysFromScan, waitersFrom } from './redis-inspect.js'

const NOW = 1_000_000

describe('redis inspect replies', () => {
  it('latchkey layout: live records are holders, expired ones (past lock-delay) are not', () => {
    const reply: InspectReply = [
      NOW,
      5_000,
      ['a', `mutex|${NOW + 500}|${NOW + 500}|42`, 'gone', `mutex|${NOW - 10}|${NOW - 10}|41`],
      [],
      [],
      [],
      [],
      [],
    ]
    expect(holdersFrom(reply, false)).toEqual([{ owner: 'a', kind: 'mutex', token: 42n, expiresAt: NOW + 500 }])
  })

  it('redisson layout: a field without a record is a Java holder with its count and the hash TTL', () => {
    const reply: InspectReply = [
      NOW,
      30_000,
      ['java-uuid:1', '2', 'lk:7', '1'],
      ['lk:7', `semaphore|${NOW + 100}|${NOW + 100}|9|4`],
      [],
      [],
      [],
      [],
    ]
    expect(holdersFrom(reply, true)).toEqual([
      { owner: 'java-uuid:1', kind: 'mutex', count: 2, expiresAt: NOW + 30_000 },
      { owner: 'lk:7', kind: 'semaphore', token: 9n, expiresAt: NOW + 100, count: 1, permits: 4 },
    ])
  })

  it('waiters: the line (odd score: writer), live watchers with their kind, watching readers', () => {
    const reply: InspectReply = [
      NOW,
      -1,
      [],
      [],
      ['f', '2', 'w', '5', 'dead', '6'],
      ['f', String(NOW + 100), 'w', String(NOW + 100), 'dead', String(NOW - 1), 'r', String(NOW + 100)],
      ['m', 'old'],
      ['m', `mutex 1000 0 1 w 5000 ${NOW + 50} ch`, 'old', `mutex 1000 0 1 w 5000 ${NOW - 50} ch`],
    ]
    expect(waitersFrom(reply)).toEqual([
      { owner: 'f', kind: 'fair' },
      { owner: 'w', kind: 'write' },
      { owner: 'm', kind: 'mutex' },
      { owner: 'r', kind: 'read' },
    ])
  })

  it('SCAN results map back to lock names in each layout', () => {
    const { keys: k } = latchkeyLayout.keysOf({ key: 'shop:a{b}%', kind: 'semaphore' })
    expect(lockKeysFromScan([...k, 'latchkey:{shop:x}', 'latchkey:{shop:x}:fence'], latchkeyLayout).sort()).toEqual([
      'shop:a{b}%',
      'shop:x',
    ])
    const r = redissonLayout.keysOf({ key: 'shop:y', kind: 'mutex' }).keys
    const s = redissonLayout.keysOf({ key: 'shop:z', kind: 'semaphore' }).keys
    expect(lockKeysFromScan([...r, ...s], redissonLayout).sort()).toEqual(['shop:y', 'shop:z'])
  })
})
