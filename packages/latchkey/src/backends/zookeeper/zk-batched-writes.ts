/**
 * One socket write for the requests a busy process sends in one turn of the event loop, on a node-zookeeper-client
 * connection. The client writes each request to its socket as soon as it is queued (and disables Nagle), so every
 * request is a system call on the client and a read on the server; in a CPU profile of 10 waiters over four
 * processes, the socket writes were the largest single share of a worker's time (bench/zookeeper-curator.ts).
 * So when a request goes out while others of the session are still unanswered, the socket is corked until the
 * current turn's callbacks and microtasks have run (process.nextTick), and what they wrote leaves in one `writev`.
 * A request sent while nothing is in flight is written at once as before: no reply can arrive meanwhile, so
 * holding it could only delay it. This is the Redis backend's batching (redis/batched-writes.ts), with the same cap:
 * holding a whole turn's requests makes client and server take turns (each idle while the other works), so every
 * {@link MAX_BATCH}th request lets the held ones go.
 *
 * The hook is a listener put ahead of the client's own on its packet queue's `readable` event, which the client
 * emits for every queued request just before it writes it; any other client (or a future version without that
 * queue) is left as is.
 */
import type { ZkClient } from './zk-client.js'

/** Requests held back at most before the socket is uncorked (the Redis backend's measured cap). */
const MAX_BATCH = 8

interface Corkable {
  cork?: () => void
  uncork?: () => void
}

/** The parts of node-zookeeper-client 1.x's ConnectionManager this reads. */
interface Manager {
  readonly socket?: Corkable | null
  readonly pendingQueue?: { readonly length: number }
  readonly packetQueue?: { prependListener?(event: string, listener: () => void): unknown }
}

const batched = new WeakSet<object>()

/** Makes `client` batch the socket writes of requests queued in the same turn (see the module comment); once. */
export function batchWrites(client: ZkClient): void {
  const manager = (client as { connectionManager?: Manager }).connectionManager
  const queue = manager?.packetQueue
  if (manager === undefined || typeof queue?.prependListener !== 'function' || batched.has(manager)) return
  batched.add(manager)
  let corked: Corkable | undefined
  let held = 0
  const flush = (): void => {
    const socket = corked
    corked = undefined
    socket?.uncork?.()
  }
  queue.prependListener('readable', () => {
    if (corked !== undefined) {
      // The held ones leave in one write now; this one goes out on its own right after, the next starts a batch.
      if (++held >= MAX_BATCH) flush()
      return
    }
    const socket = manager.socket
    if (socket === undefined || socket === null || typeof socket.cork !== 'function') return
    if ((manager.pendingQueue?.length ?? 0) === 0) return
    socket.cork()
    held = 0
    corked = socket
    process.nextTick(flush)
  })
}
