/**
 * The notifier's waking rules, without servers (subscriber connections are stubs that acknowledge at once): only a
 * process's head waiter makes rounds of its own, and a release wakes it once a quorum of nodes' copies came.
 */
import { describe, expect, it } from 'vitest'
import { eventually } from '../../testing/index.js'
import type { SubscriberConnection } from '../redis/client-adapter.js'
import { blockedFor, isGone, polled } from './contention.js'
import { followerOf } from './local-successor.js'
import { RedlockNotifier, type SubscriberOpener } from './redlock-notifier.js'
import type { RedlockSubscription } from './redlock-subscription.js'

const NODES = 5
const QUORUM = 3
const CHANNEL = 'latchkey:redlock:unit:released'

const stub: SubscriberOpener = (): SubscriberConnection => ({
  subscribe: async () => undefined,
  unsubscribe: async () => undefined,
  close: async () => undefined,
})

/** A notifier over NODES stub connections, with `owners` subscribed in order and every acknowledgement's wake spent. */
async function subscribed(...owners: string[]): Promise<{ notifier: RedlockNotifier; subs: RedlockSubscription[] }> {
  const notifier = new RedlockNotifier(
    Array.from({ length: NODES }, () => stub),
    60_000,
    QUORUM,
  )
  const subs = owners.map((o) => notifier.subscribe(CHANNEL, o))
  await Promise.all(subs[0]?.channel.subscribed ?? [])
  for (const s of subs) spend(s)
  return { notifier, subs }
}

/** What a try does with a wake: it answers it. */
function spend(sub: RedlockSubscription): void {
  sub.owesTry = false
  sub.pending = false
}

describe('RedlockNotifier', () => {
  it('a waiter behind the head makes no round of its own, even when nothing is known of the holder', async () => {
    const { notifier, subs } = await subscribed('head', 'second')
    const [head, second] = subs as [RedlockSubscription, RedlockSubscription]
    const now = performance.now()
    expect(blockedFor(second, now)).toBeGreaterThan(0)
    // The head's round was a split vote: the process knows no holder. The head asks again; the one behind it
    // still waits (before, it made a round too, and so did every other sleeper whose timer came).
    polled(head, now, undefined, 0)
    expect(blockedFor(head, now + 1)).toBeUndefined()
    expect(blockedFor(second, now + 1)).toBeGreaterThan(0)
    expect(blockedFor(second, now + 5_000)).toBeGreaterThan(0)
    // Once the head has left, the next in line is the head.
    head.close()
    expect(blockedFor(second, now + 5_000)).toBeUndefined()
    await notifier.close()
  })

  it('a release wakes the head at the quorum-th node copy of its message, once', async () => {
    const { notifier, subs } = await subscribed('head', 'second')
    const [head, second] = subs as [RedlockSubscription, RedlockSubscription]
    notifier.dispatch(CHANNEL, 'holder', 0)
    notifier.dispatch(CHANNEL, 'holder', 1)
    expect(head.owesTry).toBe(false)
    expect(isGone(notifier.channelOf(CHANNEL), 'holder', performance.now())).toBe(true)
    notifier.dispatch(CHANNEL, 'holder', 2)
    expect(head.owesTry).toBe(true)
    spend(head)
    notifier.dispatch(CHANNEL, 'holder', 3)
    notifier.dispatch(CHANNEL, 'holder', 4)
    expect(head.owesTry || second.owesTry).toBe(false)
    await notifier.close()
  })

  it('a release whose other copies do not come (subscriber connections down) still wakes the head', async () => {
    const { notifier, subs } = await subscribed('head')
    const [head] = subs as [RedlockSubscription]
    notifier.dispatch(CHANNEL, 'holder', 4)
    await eventually('the head woken by its grace timer', () => head.owesTry)
    await notifier.close()
  })

  it('a handoff wakes only the waiter it names, at the quorum-th node; an undo takes its node back until announced', async () => {
    const { notifier, subs } = await subscribed('head', 'second')
    const [head, second] = subs as [RedlockSubscription, RedlockSubscription]
    // Handed to another process's waiter: nobody here is woken, and that waiter is what blocks this process.
    notifier.dispatch(CHANNEL, 'holder elsewhere', 0)
    expect(head.owesTry || second.owesTry).toBe(false)
    expect(head.channel.blocked?.holder).toBe('elsewhere')
    // Handed to the head by nodes 1 and 2, and its own undo deleted its key on node 2 (the reply came first).
    notifier.dispatch(CHANNEL, 'elsewhere head', 1)
    notifier.dispatch(CHANNEL, 'elsewhere head', 2)
    head.undoneOn(2, 1)
    notifier.dispatch(CHANNEL, 'elsewhere head', 3)
    expect(head.grantedNodes()).toBe(2)
    expect(head.owesTry).toBe(false)
    notifier.dispatch(CHANNEL, '~head', 2)
    notifier.dispatch(CHANNEL, 'elsewhere head', 4)
    expect(head.grantedNodes()).toBe(3)
    expect(head.owesTry).toBe(true)
    expect(second.owesTry).toBe(false)
    await notifier.close()
  })

  it('the waiter a release at home may place in line is the one behind, without a place or a round of its own', async () => {
    const { notifier, subs } = await subscribed('a', 'b')
    const [a] = subs as [RedlockSubscription, RedlockSubscription]
    // Subscribed without a lease length, no release of this process could hand it the lock.
    expect(followerOf(a)).toBeUndefined()
    const withLease = new RedlockNotifier([stub], 60_000, 1)
    const [x, y] = ['x', 'y'].map((o) => withLease.subscribe(CHANNEL, o, 10_000)) as [
      RedlockSubscription,
      RedlockSubscription,
    ]
    expect(followerOf(x)).toBe(y)
    y.inRound = true
    expect(followerOf(x)).toBeUndefined()
    y.inRound = false
    y.ticket = Date.now()
    expect(followerOf(x)).toBeUndefined()
    expect(followerOf(y)).toBeUndefined()
    await withLease.close()
    await notifier.close()
  })

  it('a head already placed in line is not woken for a round when the waiter before it leaves with the lock', async () => {
    const { notifier, subs } = await subscribed('a', 'b', 'c')
    const [a, b, c] = subs as [RedlockSubscription, RedlockSubscription, RedlockSubscription]
    b.placedAt = performance.now()
    a.close()
    expect(b.owesTry).toBe(false)
    // Not placed: the new head is woken to take its place in line with a round.
    b.close()
    expect(c.owesTry).toBe(true)
    await notifier.close()
  })

  it('a waiter that woke and leaves without retrying passes the wake on, placed head or not', async () => {
    const { notifier, subs } = await subscribed('a', 'b')
    const [a, b] = subs as [RedlockSubscription, RedlockSubscription]
    b.placedAt = performance.now()
    a.fire()
    a.close()
    expect(b.owesTry).toBe(true)
    await notifier.close()
  })

  it('a lease handed over by the line is timed from the quorum-th latest round the granting nodes answered', async () => {
    const { notifier, subs } = await subscribed('a')
    const [a] = subs as [RedlockSubscription]
    a.firstTriedAt = 100
    a.answeredAt.set(0, 400)
    a.answeredAt.set(1, 300)
    a.answeredAt.set(2, 200)
    // Node 3 never answered a round: its key was set after the first round at the earliest.
    for (const node of [0, 1]) a.grants.add(node)
    expect(a.handedSince(QUORUM)).toBeUndefined()
    a.grants.add(3)
    expect(a.handedSince(QUORUM)).toBe(100)
    a.grants.add(2)
    expect(a.handedSince(QUORUM)).toBe(200)
    // A node whose key its own undo may have deleted does not count until the undo's message came.
    a.undoneOn(0, 1)
    expect(a.handedSince(QUORUM)).toBe(100)
    a.undoneOn(0, -1)
    expect(a.handedSince(QUORUM)).toBe(200)
    await notifier.close()
  })
})
