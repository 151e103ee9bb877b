/**
 * One socket write for the requests a busy process sends in one turn of the event loop, for clients that write each
 * request to their socket as soon as it is queued (ioredis, node-zookeeper-client): a system call per request on
 * the client and a read on the server, which under load was the largest single share of a process's CPU in both
 * backends' benches. So when a request goes out while others of the connection are still unanswered, the socket is
 * corked until the current turn's callbacks and microtasks have run (process.nextTick), and what they wrote leaves
 * in one `writev`. A request sent while nothing is in flight (one lock at a time) is written at once: no reply can
 * arrive meanwhile and no other request is coming in the same turn, so holding it could only delay it.
 *
 * A batch is at most {@link MAX_BATCH} requests. Holding a whole turn's requests made the client and the server
 * take turns: the server idled while the client built the batch, the client while the server ran it (both about
 * half busy on an idle 2-core host), and 50 concurrent Redis lock+unlock loops fell to 0.84x redis-semaphore.
 * Letting a full batch leave at once lets the server start on it while the client builds the rest.
 */

/**
 * Requests held back at most before the socket is uncorked. Measured on Redis with bench/redis-uncontended.ts (50
 * loops, idle host, 9 rounds each, ratio to redis-semaphore in the same run): whole turns 0.84x, 4 1.36x, 8 1.47x
 * (90,000 pairs/s), 16 1.60x (79,000 pairs/s, a slower run); no batching 0.81x.
 */
export const MAX_BATCH = 8

/** A socket as the batcher uses it (net.Socket; a client's stand-in may lack the methods). */
export interface Corkable {
  cork?: () => void
  uncork?: () => void
}

/** What to do with a request just queued: write it now, hold it, or write the held ones first (see {@link turnHolds}). */
export type HoldStep = 'send' | 'hold' | 'full'

/**
 * The hold rule above, for one connection, whatever holds its requests back (a corked socket, a queue). The
 * returned function runs as each request is queued, with how many of the connection's requests await replies:
 * - `send`: nothing is held and nothing in flight; write it now.
 * - `hold`: hold it; `release` runs at the end of the turn in which the batch began.
 * - `full`: {@link MAX_BATCH} are held already; the caller writes those now, and this one begins the next batch
 *   (released with the turn's end, or when it is full in turn).
 */
export function turnHolds(release: () => void): (inFlight: number) => HoldStep {
  let holding = false
  let held = 0
  const endOfTurn = (): void => {
    holding = false
    release()
  }
  return (inFlight) => {
    if (holding) {
      if (held < MAX_BATCH) {
        held++
        return 'hold'
      }
      held = 1
      return 'full'
    }
    // Nothing in flight: no reply can arrive meanwhile and no other request is coming, so holding could only delay.
    if (inFlight === 0) return 'send'
    holding = true
    held = 1
    process.nextTick(endOfTurn)
    return 'hold'
  }
}

/**
 * A function to call just before each request is written to a connection, which corks the connection's socket
 * when that batches (see the module comment and {@link turnHolds}). `socket` gives the connection's current socket
 * (it changes on reconnects), `inFlight` how many of its requests await replies.
 */
export function writeBatcher(socket: () => Corkable | null | undefined, inFlight: () => number): () => void {
  let corked: Corkable | undefined
  const hold = turnHolds(() => {
    const current = corked
    corked = undefined
    current?.uncork?.()
  })
  return () => {
    if (corked !== undefined) {
      // A full batch leaves in one write; the socket stays corked for this request and the rest of the turn.
      if (hold(inFlight()) === 'full') {
        corked.uncork?.()
        corked.cork?.()
      }
      return
    }
    const current = socket()
    if (current === undefined || current === null || typeof current.cork !== 'function') return
    if (hold(inFlight()) !== 'hold') return
    current.cork()
    corked = current
  }
}
