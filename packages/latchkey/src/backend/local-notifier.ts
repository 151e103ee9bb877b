/**
 * In-process release notifications: a backend calls `notify(key)` after a release in this process and
 * every subscription of that key wakes. Used by the embedded backends; server backends push their own.
 */
import type { LockKind, ReleaseSubscription } from './types.js'
import { WakeableSubscription } from './wakeable-subscription.js'

/**
 * A {@link ReleaseSubscription} that a backend wakes with `fire()`: `wait` resolves on the next fire (at once if
 * one came since the last wait), after `timeoutMs`, or rejects with `signal.reason`. Backends that receive
 * notifications their own way (pub/sub, watches, NOTIFY) create one per waiter and fire it.
 *
 * @example
 * const sub = new WakeSubscription(() => waiters.delete(sub)); waiters.add(sub) // later: sub.fire()
 */
export class WakeSubscription extends WakeableSubscription implements ReleaseSubscription {
  /** `detach` runs once on close(): remove the subscription from wherever the backend keeps it. */
  constructor(private detach: (sub: WakeSubscription) => void = () => undefined) {
    super()
  }

  /** True while a `wait` is pending. */
  get waiting(): boolean {
    return this.wake !== undefined
  }

  /** Wakes the pending wait, or the next one; ignored once closed. */
  fire(): void {
    if (this.closed) return
    this.pending = true
    this.wake?.()
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.stopListening()
    const detach = this.detach
    this.detach = () => undefined
    detach(this)
    this.wake?.()
  }
}

/**
 * A registry of subscriptions per key. A release wakes every waiter that may be able to proceed together (readers,
 * and fair / write waiters, whose turn only the backend knows) but only ONE mutex or semaphore waiter, the oldest:
 * a release frees one slot, and waking them all is the herd that makes handoff quadratic in the waiter count.
 * A woken waiter that leaves without using its wake-up passes it on to the next one.
 */
export class LocalNotifier {
  private readonly subs = new Map<string, Set<WakeSubscription>>()
  private readonly wakesOne = new WeakSet<WakeSubscription>()

  /** `kind` `mutex` or `semaphore` makes the subscriber one of those woken one at a time. */
  subscribe(key: string, kind?: LockKind): ReleaseSubscription {
    const sub = new WakeSubscription((s) => {
      const set = this.subs.get(key)
      set?.delete(s)
      if (set?.size === 0) this.subs.delete(key)
      else if (s.pending && this.wakesOne.has(s)) this.wakeOne(set)
    })
    if (kind === 'mutex' || kind === 'semaphore') this.wakesOne.add(sub)
    let set = this.subs.get(key)
    if (set === undefined) {
      set = new Set()
      this.subs.set(key, set)
    }
    set.add(sub)
    return sub
  }

  /** Wakes the waiters of `key` that a release may let through (`all`: every one, e.g. after a force release). */
  notify(key: string, all = false): void {
    const set = this.subs.get(key)
    if (set === undefined) return
    for (const sub of set) if (all || !this.wakesOne.has(sub)) sub.fire()
    if (!all) this.wakeOne(set)
  }

  /** Fires the oldest one-at-a-time subscriber that has no wake-up pending yet. */
  private wakeOne(set: Set<WakeSubscription> | undefined): void {
    for (const sub of set ?? []) {
      if (this.wakesOne.has(sub) && !sub.pending) {
        sub.fire()
        return
      }
    }
  }

  /** Wakes every subscription of every key (after a gap in which notifications may have been missed). */
  notifyAll(): void {
    for (const key of [...this.subs.keys()]) this.notify(key, true)
  }

  /** Wakes the subscribers of every key that `matches`. */
  notifyWhere(matches: (key: string) => boolean): void {
    for (const key of this.subs.keys()) if (matches(key)) this.notify(key)
  }

  /** Number of open subscriptions (for leak checks). */
  get size(): number {
    let n = 0
    for (const set of this.subs.values()) n += set.size
    return n
  }
}
