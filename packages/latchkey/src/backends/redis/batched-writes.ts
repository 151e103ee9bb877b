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
 */

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
  return () => {
    if (corked !== undefined) return
    const stream = connection.stream
    if (stream === undefined || stream === null || typeof stream.cork !== 'function') return
    if ((connection.commandQueue?.length ?? 0) === 0) return
    stream.cork()
    corked = stream
    process.nextTick(flush)
  }
}
