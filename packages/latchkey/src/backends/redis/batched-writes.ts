/**
 * Batched socket writes on an ioredis connection (../../backend/write-batches.ts says why and how): ioredis writes
 * each command to its socket at once, which at 50 concurrent uncontended locks was the largest share of both the
 * client's and the server's CPU per lock+unlock (bench/redis-uncontended.ts). node-redis already writes its queued
 * commands together, once per turn (setImmediate); an ioredis Cluster client has no single socket and is left as is.
 */
import { writeBatcher } from '../../backend/write-batches.js'

/** The parts of an ioredis `Redis` client this reads: its socket and its queue of commands awaiting replies. */
interface IoredisConnection {
  readonly stream?: { cork?: () => void; uncork?: () => void } | null
  readonly commandQueue?: { readonly length: number }
}

/** A function to call just before each command is handed to `client`; it corks the socket when that batches. */
export function batchedWrites(client: object): () => void {
  const connection = client as IoredisConnection
  return writeBatcher(
    () => connection.stream,
    () => connection.commandQueue?.length ?? 0,
  )
}
