/**
 * One socket write for the many commands a busy process sends in one turn of the event loop, on an ioredis
 * connection. ioredis writes each command to its socket at once: a system call per command, on the client and
 * (one read each) on the server, which at 50 concurrent uncontended locks was the largest share of both sides'
 * CPU per lock+unlock (bench/redis-uncontended.ts). So when a command goes out while others of the connection
 * are still unanswered, the socket is corked until the current turn's callbacks and microtasks have run
 * (process.nextTick), and everything they wrote leaves in one `writev`. A command sent while nothing is in flight
 * (one lock at a time) is written at once as before: waiting could only delay it, since no reply can arrive
 * and no other command is coming in the same turn. node-redis already writes its queued commands together, once
 * per turn (setImmediate); an ioredis Cluster client has no single socket and is left as is.
 *
 * A batch is at most {@link MAX_BATCH} commands. Holding a whole turn's commands made the client and the server
 * take turns: the server idled while the client built the batch, the client while the server ran it (both about half
 * busy on an idle 2-core host), and 50 concurrent lock+unlock loops fell to 0.84x redis-semaphore. Sending every
 * eighth command at once lets the server start on the first while the client builds the rest.
 */

/**
 * Commands held back at most before the socket is uncorked. Measured with bench/redis-uncontended.ts (50 loops,
 * idle host, 9 rounds each, ratio to redis-semaphore in the same run): whole turns 0.84x, 4 1.36x, 8 1.47x
 * (90,000 pairs/s), 16 1.60x (79,000 pairs/s, a slower run); no batching 0.81x.
 */
const MAX_BATCH = 8

/** The parts of an ioredis `Redis` client this reads: its socket and its queue of commands awaiting replies. */
interface IoredisConnection {
  readonly stream?: { cork?: () => void; uncork?: () => void }
  readonly commandQueue?: { readonly length: number }
}

/** A function to call just before each command is handed to `client`; it corks the socket when that batches. */
export function batchedWrites(client: object): () => void {
  const connection = client as IoredisConnection
  let corked: { uncork?: () => void } | undefined
  const flush = (): void => {
    const stream = corked
    corked = undefined
    stream?.uncork?.()
  }
  let held = 0
  return () => {
    if (corked !== undefined) {
      // The held ones leave in one write now; this one goes out on its own right after, the next starts a batch.
      if (++held >= MAX_BATCH) flush()
      return
    }
    const stream = connection.stream
    if (stream === undefined || stream === null || typeof stream.cork !== 'function') return
    if ((connection.commandQueue?.length ?? 0) === 0) return
    stream.cork()
    held = 0
    corked = stream
    process.nextTick(flush)
  }
}
