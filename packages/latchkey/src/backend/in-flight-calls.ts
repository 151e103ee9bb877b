/**
 * A backend's calls in flight, each with the function that fails it when its connection is declared lost, kept in a
 * doubly linked list rather than a Set.
 *
 * Why not a Set: a Set that gains an entry per call and loses it at the answer rehashes its table each time its size
 * crosses a bound, and V8 links every table it replaces to its successor (so that an iterator on the old table can
 * move on). A replaced table that lives through one young-generation collection is promoted, and keeps the tables
 * after it, and the calls and promises they held, alive until the next full collection. With 50 ZooKeeper locks taken
 * and released in a loop, that promoted about 2 MB per young collection (0.6 MB with this list), and the collector
 * took a sixth of the client's CPU; a list whose removed links are cleared gives the collector nothing to keep.
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
