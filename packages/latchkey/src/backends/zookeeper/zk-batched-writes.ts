/**
 * Batched socket writes on a node-zookeeper-client connection (../../backend/write-batches.ts says why and how, and
 * why a batch is at most 8 requests): the client writes each request to its socket as soon as it is queued (and
 * disables Nagle); in a CPU profile of 10 waiters over four processes, the socket writes were the largest single
 * share of a worker's time (bench/zookeeper-curator.ts).
 *
 * The hook is a listener put ahead of the client's own on its packet queue's `readable` event, which the client
 * emits for every queued request just before it writes it; any other client (or a future version without that
 * queue) is left as is.
 */
import { type Corkable, writeBatcher } from '../../backend/write-batches.js'
import type { ZkClient } from './zk-client.js'

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
  queue.prependListener(
    'readable',
    writeBatcher(
      () => manager.socket,
      () => manager.pendingQueue?.length ?? 0,
    ),
  )
}
