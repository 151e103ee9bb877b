/**
 * In-process release wake-ups that avoid the thundering herd: a release of a mutex can admit one waiter,
 * so it wakes only the longest-waiting mutex subscription of that key (the SQL backends pay a whole
 * transaction for every woken waiter that then loses; 200 waiters woken per release made the 200-acquirer
 * test quadratic). Every other kind (fair, read, write, semaphore) is woken in full, since a release may
 * admit several of them, or only a particular one (the first in line). Shared by the SQL backends.
 */
import type { LockKind, ReleaseSubscription } from '../../backend/types.js'

class Subscription implements ReleaseSubscription {
  pending = false
  closed = false
  private wake: (() => void) | undefined

  constructor(
    readonly kind: LockKind,
    private readonly detach: (sub: Subscription) => void,
  ) {}

  fire(): void {
    this.pending = true
    this.wake?.()
  }

  wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (this.pending || this.closed) {
      this.pending = false
      return Promise.resolve()
    }
    return new Promise<void>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this.wake = undefined
        this.pending = false
      }
      const onAbort = (): void => {
        finish()
        reject(signal?.reason)
      }
      const timer = setTimeout(() => {
        finish()
        resolve()
      }, timeoutMs)
      timer.unref()
      this.wake = () => {
        finish()
        resolve()
      }
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.detach(this)
    this.wake?.()
  }
}

/** Subscriptions per key, in subscription order (oldest first). */
export class WakeOneNotifier {
  private readonly subs = new Map<string, Set<Subscription>>()

  subscribe(key: string, kind: LockKind): ReleaseSubscription {
    let set = this.subs.get(key)
    if (set === undefined) {
      set = new Set()
      this.subs.set(key, set)
    }
    const sub = new Subscription(kind, (s) => {
      const current = this.subs.get(key)
      current?.delete(s)
      if (current?.size === 0) this.subs.delete(key)
      // A wake-up it never consumed goes to the next waiter rather than being lost.
      if (s.pending && s.kind === 'mutex') this.notify(key)
    })
    set.add(sub)
    return sub
  }

  /** Wakes every non-mutex subscription of `key` and the oldest mutex subscription not already woken. */
  notify(key: string): void {
    const set = this.subs.get(key)
    if (set === undefined) return
    let mutexWoken = false
    for (const sub of set) {
      if (sub.kind !== 'mutex') sub.fire()
      else if (!mutexWoken && !sub.pending) {
        sub.fire()
        mutexWoken = true
      }
    }
  }

  /** Wakes every subscription (after a gap in which releases may have been missed). */
  notifyAll(): void {
    for (const set of this.subs.values()) for (const sub of set) sub.fire()
  }

  /** Keys with open subscriptions. */
  keys(): IterableIterator<string> {
    return this.subs.keys()
  }

  /** Number of open subscriptions (for leak checks). */
  get size(): number {
    let n = 0
    for (const set of this.subs.values()) n += set.size
    return n
  }
}
