/**
 * A backend's calls in flight, each with the function that fails it when its connection is declared lost, kept in a
 * doubly linked list rather than a Set.
 *
 * Why not a Set: a Set that gains and loses an entry per call keeps the collector from freeing the calls until a full
 * collection (churn-map.ts says how). With 50 ZooKeeper locks taken and released in a loop, the Set of the requests
 * in flight promoted about 2 MB per young collection, and this list 0.6 MB; a removed link is cleared, so the list
 * gives the collector nothing to keep.
 */

/** One call in the list; `remove` it when the call is answered. */
export interface InFlightCall {
  /** Fails the call (its connection is gone). */
  readonly fail: (error: unknown) => void
  prev: InFlightCall | undefined
  next: InFlightCall | undefined
  linked: boolean
}

export class InFlightCalls {
  private head: InFlightCall | undefined

  /** Adds a call that `fail` fails. */
  add(fail: (error: unknown) => void): InFlightCall {
    const call: InFlightCall = { fail, prev: undefined, next: this.head, linked: true }
    if (this.head !== undefined) this.head.prev = call
    this.head = call
    return call
  }

  /** Takes `call` out; false when it was already out (answered, or failed by `failAll`). */
  remove(call: InFlightCall): boolean {
    if (!call.linked) return false
    call.linked = false
    if (call.prev === undefined) this.head = call.next
    else call.prev.next = call.next
    if (call.next !== undefined) call.next.prev = call.prev
    call.prev = undefined
    call.next = undefined
    return true
  }

  /** Takes every call out and fails each with `error`. */
  failAll(error: unknown): void {
    while (this.head !== undefined) {
      const call = this.head
      this.remove(call)
      call.fail(error)
    }
  }
}
