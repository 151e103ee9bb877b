import type { LockEvent } from '../core/events.js'

/** What one event did to the count of held leases; `'repeat'`: nothing, and the event repeats an earlier one. */
export type HeldChange = -1 | 0 | 1 | 'repeat'

/**
 * Counts the leases a `createLocks({ onEvent })` handler has seen acquired and not yet ended, from the events
 * alone, so that a "held leases" gauge cannot drift. Events carry no lease id, and one lease can report its end
 * more than once:
 * - `lost`, then `released` or `release-failed` when its holder calls `release()` afterwards;
 * - `release-failed` twice with the same error (the failed `release()`, then `Locks.close()` reporting it);
 * - `release-failed` whose error's `cause` is the `lost` event's error (releasing a lease known to be lost).
 * A lease is named by backend, kind, name and token; only the first end of a live lease counts. The map holds
 * live leases only, so it is as large as what the process holds. Reentrant acquisitions share their outer
 * lease and count nothing.
 *
 * One blind spot, which self-corrects: two live leases with the same name and token (tokens are `0n` on
 * backends without fencing) where one was lost and then released while the other is still held. The late
 * release ends the other one's count early; the other's own end then counts nothing.
 */
export class HeldLeases {
  private readonly live = new Map<string, number>()
  /** Errors of `lost` and `release-failed` events already counted: a later report of the same end is ignored. */
  private readonly ended = new WeakSet<object>()

  /**
   * Applies `event`; returns how the number of held leases of its lock changed (+1, -1 or 0), or `'repeat'`
   * for a second report of a release failure already seen, which a counter of failures should skip too.
   */
  update(event: LockEvent): HeldChange {
    switch (event.type) {
      case 'acquired': {
        if (event.reentrant) return 0
        const key = keyOf(event, event.token)
        this.live.set(key, (this.live.get(key) ?? 0) + 1)
        return 1
      }
      case 'lost':
        this.ended.add(event.error)
        return this.end(keyOf(event, event.token))
      case 'released':
        return this.end(keyOf(event, event.token))
      case 'release-failed': {
        const error = event.error
        if (isObject(error)) {
          if (this.ended.has(error)) return 'repeat'
          this.ended.add(error)
          const cause = (error as { cause?: unknown }).cause
          if (isObject(cause) && this.ended.has(cause)) return 0
        }
        return this.end(keyOf(event, event.token))
      }
      default:
        return 0
    }
  }

  /** How many leases are held now (all locks). */
  get size(): number {
    let total = 0
    for (const count of this.live.values()) total += count
    return total
  }

  private end(key: string): -1 | 0 {
    const count = this.live.get(key)
    if (count === undefined) return 0
    if (count <= 1) this.live.delete(key)
    else this.live.set(key, count - 1)
    return -1
  }
}

function keyOf(event: LockEvent, token: bigint): string {
  // NUL cannot appear in a backend name or kind; the name goes last so it may hold anything.
  return `${event.backend}\u0000${event.kind}\u0000${token}\u0000${event.name}`
}

function isObject(value: unknown): value is object {
  return (typeof value === 'object' && value !== null) || typeof value === 'function'
}
