/**
 * The open streams of an HTTP/2 session by id, in an object used as a dictionary rather than a Map. Every unary call
 * is a stream opened and closed within the call, so the table gains and loses an entry per call; a Map doing that
 * replaces its hash table over and over, and V8 links each replaced table to the next, which lets the collector keep
 * the calls of every table since the last full collection (`backend/in-flight-calls.ts` says how). With 50 etcd
 * locks taken and released in a loop, that promoted about 1 MB per young collection; with this table, 0.3 MB.
 */
import type { H2Stream } from './h2-stream.js'

export class H2StreamTable {
  private readonly byId: Record<number, H2Stream> = Object.create(null)
  /** How many streams are open. */
  size = 0

  get(id: number): H2Stream | undefined {
    return this.byId[id]
  }

  set(stream: H2Stream): void {
    if (this.byId[stream.id] === undefined) this.size++
    this.byId[stream.id] = stream
  }

  delete(id: number): void {
    if (this.byId[id] === undefined) return
    this.size--
    delete this.byId[id]
  }

  /** The open streams (a copy: closing them while walking it is safe). */
  values(): H2Stream[] {
    return Object.values(this.byId)
  }
}
