import type { RedisClientLike } from './client-adapter.js'
import type { RedisLayoutName } from './key-layout.js'

/** Options of {@link redisBackend}. */
export interface RedisBackendOptions {
  /**
   * An ioredis client, or a connected node-redis client. Never closed by the backend. On an ioredis client, a
   * command the backend sends while others are unanswered corks the socket until the next tick or the eighth
   * command, so the commands of one turn of the event loop (the app's own included) leave in few writes
   * (batched-writes.ts).
   */
  client: RedisClientLike
  /** `latchkey` (default) or `redisson`: Redisson RLock's key, hash field, channel and unlock message. */
  layout?: RedisLayoutName
  /**
   * After each lock write (grant, renewal), `WAIT` until `replicas` replicas acknowledged it or `timeoutMs`
   * passed, as Redisson does since it deprecated RedLock. Fewer acknowledgements: the grant is undone and
   * the call fails with the retryable `BackendUnavailableError`. Limits: WAIT narrows the window in which a
   * failover loses a lock but does not close it (replication stays asynchronous; a replica may acknowledge
   * and still not be the one promoted, and a lock can be lost before WAIT returns); WAIT blocks the client's
   * connection, so give the backend a client of its own; with a Cluster client WAIT may reach another node.
   * Default: none.
   */
  waitReplicas?: { replicas: number; timeoutMs: number }
  /** A command with no reply after this long fails with `BackendUnavailableError` (0: never). Default 5 000. */
  commandTimeoutMs?: number
  /** How long an idle release channel stays subscribed, so hot locks do not re-subscribe. Default 10 000. */
  subscriberLingerMs?: number
  /**
   * How long a lock's fencing counter (`latchkey:{name}:fence`) stays after the last token it issued (at least
   * 7/8 of it: a process refreshes the expiry of a lock it keeps taking once per eighth), so a lock per order
   * does not leave a key per order forever (0: never expires). A counter that expired restarts
   * at the server clock in microseconds, above every token issued before (scripts/grant.lua, next_fence,
   * gives the argument), so tokens still only increase; keep it longer than any lease so the clock's margin
   * stays large. Give every process that takes the same locks the same value: a shorter one in another process
   * shortens the counter's expiry under this one's, which leaves this one less margin against a server clock stepped
   * back (tokens still increase). Not settable with `layout: 'redisson'`, whose counter Java clients share and never
   * expire. Default 86 400 000 (24 hours).
   */
  fenceIdleTtlMs?: number
}
