/**
 * In-process release notifications: a backend calls `notify(key)` after a release in this process and
 * every subscription of that key wakes. Used by the embedded backends; server backends push their own.
 */
import type { ReleaseSubscription } from './types.js'

class LocalSubscription implements ReleaseSubscription {
  pending = false
  private wake: (() => void) | undefined

  constructor(private readonly detach: (sub: LocalSubscription) => void) {}

  fire(): void {
    this.pending = true
    this.wake?.()
  }

  wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (this.pending) {
      this.pending = false
      return Promise.resolve()
    }
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this.wake = undefined
        this.pending = false
      }
      const onAbort = (): void => {
        done()
        reject(signal?.reason)
      }
      const timer = setTimeout(() => {
        done()
        resolve()
      }, timeoutMs)
      this.wake = () => {
        done()
        resolve()
      }
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  close(): void {
    this.detach(this)
    this.wake?.()
  }
}

/** A registry of subscriptions per key. */
export class LocalNotifier {
  private readonly subs = new Map<string, Set<LocalSubscription>>()

  subscribe(key: string): ReleaseSubscription {
    const sub = new LocalSubscription((s) => {
      const set = this.subs.get(key)
      set?.delete(s)
      if (set?.size === 0) this.subs.delete(key)
    })
    let set = this.subs.get(key)
    if (set === undefined) {
      set = new Set()
      this.subs.set(key, set)
    }
    set.add(sub)
    return sub
  }

  notify(key: string): void {
    const set = this.subs.get(key)
    if (set === undefined) return
    for (const sub of set) sub.fire()
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
