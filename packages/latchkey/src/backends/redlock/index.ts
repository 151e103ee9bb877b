import type { Backend } from '../../backend/types.js'
import { checkOptions } from '../../core/validate.js'
import { defaultNodeTimeoutMs } from './node-timing.js'
import { RedlockBackend } from './redlock-backend.js'
import type { RedlockSettings } from './redlock-context.js'
import {
  adaptRedlockClient,
  type RedlockClientLike,
  type RedlockIoredisLike,
  type RedlockNodeRedisLike,
} from './redlock-node.js'

export { openRedlockBackend, parseRedlockUrl, type RedlockUrl } from './redlock-url.js'
export {
  defaultNodeTimeoutMs,
  RedlockBackend,
  type RedlockClientLike,
  type RedlockIoredisLike,
  type RedlockNodeRedisLike,
}

/** Options of {@link redlockBackend}. */
export interface RedlockBackendOptions {
  /** One client per independent Redis master (ioredis, or connected node-redis). Never closed by the backend. */
  clients: readonly RedlockClientLike[]
  /** Nodes that must agree. Default `floor(N / 2) + 1`; must be more than half of the nodes. */
  quorum?: number
  /** Clock drift allowed per ms of lease, as in node-redlock. Default `0.01` (plus 2 ms). */
  driftFactor?: number
  /** How long one node may take to answer. Default 0.5 % of the lease, clamped to 50-200 ms. */
  nodeTimeoutMs?: number
  /**
   * Split votes (contenders each won a minority and nobody holds the lock): `tryAcquire` makes one round and
   * answers "not acquired" with a random pause below `delayMs` (default 20) as its `retryAfterMs`; a waiting
   * `acquire({ waitMs })` tries again within that pause, abortably, like any wait. `attempts` is deprecated and
   * ignored: a backend call never sleeps, so the number of rounds is bounded by the caller's `waitMs`, not here.
   * It is still validated, so existing options keep working.
   */
  retry?: { attempts?: number; delayMs?: number }
  /** Prefix of the key on every node. Default `latchkey:redlock:`. */
  keyPrefix?: string
}

/** The key prefix RedLock uses on every node unless `keyPrefix` says otherwise. */
export const REDLOCK_KEY_PREFIX = 'latchkey:redlock:'

/**
 * RedLock (the Redis docs' "Redlock" pattern): a mutex over N independent Redis masters.
 * Each acquisition sets the same random value with `SET NX PX` on every node in parallel, each node with a
 * timeout far below the lease; it succeeds only when a majority granted it *and* validity is left
 * (`ttl - elapsed - (ttl * driftFactor + 2 ms)`, elapsed on a monotonic clock). A failed round releases on every
 * node, timed-out ones included. Extend needs a majority; release is compare-and-delete everywhere.
 * Nodes that do not answer make calls fail with `QuorumNotReachedError`, which names each node's outcome.
 * Capabilities: mutex only, `fencing: 'none'` (tokens are `0n`, and `requireFencing: true` throws
 * `UnsupportedError`), release notifications (a release publishes on every node; one subscriber connection per
 * node per backend wakes the longest-waiting local waiter, see README "Release notifications"), server clocks.
 *
 * ## When to use RedLock (and when not)
 *
 * - **Use it for efficiency locks that must survive one Redis machine going away**: avoiding duplicate work (a cron
 *   job, a cache rebuild, an e-mail send) when a rare double execution is tolerable. With 5 nodes it keeps granting,
 *   extending and releasing locks with 2 nodes killed; with 3 killed it fails at once with `QuorumNotReachedError`
 *   naming each node, instead of waiting out the lease; a SIGSTOPped node costs at most one node timeout
 *   (`test/redlock-faults.test.ts`).
 * - **Do not use it for correctness** (money, inventory, files that must not be written twice). It has no fencing
 *   token — no number that increases across independent masters survives a restart or a different majority — and
 *   its safety rests on timing: a holder paused past its lease (GC, SIGSTOP) overlaps its successor, and so does a
 *   holder whose majority included a node whose clock jumped (Redis expires keys by wall clock). Use a backend with
 *   native fencing (ZooKeeper, etcd, a SQL table, or single-node Redis if its failover losses are acceptable) and
 *   `createFenceGuard` on the resource (Kleppmann; the Redis docs say the same).
 * - **Node restarts break it unless you prevent them.** A node restarted *without persistence* while a lease is
 *   held forgets the key, and a second client gets a majority while the first still holds the lock (the
 *   crash-restart problem of docs/background.md, "RedLock's assumptions"). The test `KNOWN UNSAFE: a node
 *   restarted without persistence while a lease is held lets a second holder in` shows it happen: client 1 holds A, B, C; C is killed and restarted empty; client 2 gets
 *   C, D, E; client 1 learns it only at its next extend. Prevent it with `appendonly yes` + `appendfsync always` on
 *   every node (the test shows the key back after `kill -9` and no second holder), or by keeping a crashed node down
 *   longer than the longest lease (the test shows client 2 gets the lock only after client 1's lease ran out).
 *   Note that `kill -9` keeps data already written to the page cache, so these tests show *persistence vs none*;
 *   only `fsync always` also survives a power loss. Replicas with failover do not help: replication is
 *   asynchronous, which is the problem RedLock was built to avoid.
 * - **It is not faster than one Redis.** Every call goes to N nodes and waits for the slowest of a majority, and
 *   every handoff is a release round plus an acquire round over N nodes. A single `redisBackend` also has fencing, fair locks, read-write
 *   locks, semaphores and pushed release notifications. Choose RedLock only for the availability of a majority of
 *   independent masters.
 *
 * @example
 * const clients = [6381, 6382, 6383, 6384, 6385].map((port) => new Redis({ port, maxRetriesPerRequest: 0 }))
 * const locks = createLocks({ backend: redlockBackend({ clients }) })   // quorum 3, driftFactor 0.01
 * await locks.mutex('nightly-report').withLock(async (lease) => buildReport({ signal: lease.signal }))
 * await locks.close(); for (const c of clients) c.disconnect()
 */
export function redlockBackend(options: RedlockBackendOptions): Backend {
  const o = checkOptions('options', options) as Partial<RedlockBackendOptions>
  if (!Array.isArray(o.clients) || o.clients.length === 0) {
    throw new TypeError('latchkey: redlockBackend needs options.clients, a non-empty array of Redis clients')
  }
  const nodes = o.clients.map((client, i) => adaptRedlockClient(client, i))
  const n = nodes.length
  const quorum = o.quorum ?? Math.floor(n / 2) + 1
  if (!Number.isInteger(quorum) || quorum <= n / 2 || quorum > n) {
    // A quorum of half or less lets two disjoint groups of nodes each grant the lock.
    throw new RangeError(
      `latchkey: quorum must be an integer above ${n / 2} and at most ${n}, received ${String(quorum)}`,
    )
  }
  const driftFactor = o.driftFactor ?? 0.01
  if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 1)) {
    throw new RangeError(`latchkey: driftFactor must be a number in [0, 1), received ${String(driftFactor)}`)
  }
  const timeout = o.nodeTimeoutMs
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0)) {
    throw new RangeError(`latchkey: nodeTimeoutMs must be a positive number of ms, received ${String(timeout)}`)
  }
  const retry = checkOptions('retry', o.retry)
  // Deprecated and ignored (see RedlockBackendOptions.retry); checked so that a typo still fails loudly.
  const attempts = retry.attempts ?? 3
  const delayMs = retry.delayMs ?? 20
  if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 0) {
    throw new RangeError(`latchkey: retry.attempts must be an integer >= 0, received ${String(attempts)}`)
  }
  if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0) {
    throw new RangeError(`latchkey: retry.delayMs must be a non-negative number, received ${String(delayMs)}`)
  }
  const keyPrefix = o.keyPrefix ?? REDLOCK_KEY_PREFIX
  if (typeof keyPrefix !== 'string') throw new TypeError('latchkey: keyPrefix must be a string')
  const settings: RedlockSettings = {
    quorum,
    driftFactor,
    nodeTimeoutMs: timeout,
    retryDelayMs: delayMs,
    keyPrefix,
  }
  return new RedlockBackend(nodes, settings)
}
