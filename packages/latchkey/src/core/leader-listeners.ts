import type { LeaderRevoked, LeaderTerm } from './leader-types.js'

type Listener = (value: never) => void

/**
 * The `elected` / `revoked` listeners of one participant, and its `elected()` waiters. A listener that throws is
 * reported as a process warning: it must not stop the election (a timer or the lease's signal calls these).
 */
export class LeaderListeners {
  private readonly byEvent = { elected: new Set<Listener>(), revoked: new Set<Listener>() }
  private readonly waiters = new Set<(term: LeaderTerm) => void>()

  add(event: 'elected' | 'revoked', listener: unknown): void {
    if (event !== 'elected' && event !== 'revoked') {
      throw new TypeError(`latchkey: leader events are 'elected' and 'revoked', received ${String(event)}`)
    }
    if (typeof listener !== 'function') {
      throw new TypeError(`latchkey: a leader listener must be a function, received ${typeof listener}`)
    }
    this.byEvent[event].add(listener as Listener)
  }

  remove(event: 'elected' | 'revoked', listener: unknown): void {
    this.byEvent[event]?.delete(listener as Listener)
  }

  elected(term: LeaderTerm): void {
    for (const resolve of [...this.waiters]) resolve(term)
    this.waiters.clear()
    this.call('elected', term)
  }

  revoked(revoked: LeaderRevoked): void {
    this.call('revoked', revoked)
  }

  /** A promise of the next term; rejects when `signal` (the caller's) or `stopped` (close) aborts first. */
  nextTerm(signal: AbortSignal | undefined, stopped: AbortSignal, closedError: () => Error): Promise<LeaderTerm> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    return new Promise<LeaderTerm>((resolve, reject) => {
      const done = (): void => {
        this.waiters.delete(onTerm)
        signal?.removeEventListener('abort', onAbort)
        stopped.removeEventListener('abort', onStop)
      }
      const onTerm = (term: LeaderTerm): void => {
        done()
        resolve(term)
      }
      const onAbort = (): void => {
        done()
        reject(signal?.reason)
      }
      const onStop = (): void => {
        done()
        reject(closedError())
      }
      this.waiters.add(onTerm)
      signal?.addEventListener('abort', onAbort, { once: true })
      stopped.addEventListener('abort', onStop, { once: true })
    })
  }

  private call(event: 'elected' | 'revoked', value: LeaderTerm | LeaderRevoked): void {
    for (const listener of [...this.byEvent[event]]) {
      try {
        ;(listener as (v: typeof value) => void)(value)
      } catch (error) {
        process.emitWarning(`latchkey: a leader "${event}" listener threw: ${String(error)}`, 'LatchkeyWarning')
      }
    }
  }
}
