import { checkOptions } from '../../core/validate.js'
import { type ZkClient, zkServers } from './zk-client.js'
import { type ZkLayoutName, zkLayoutNamed } from './zk-layout.js'
import { ZookeeperBackend } from './zookeeper-backend.js'
import { parseConnectString } from './zookeeper-url.js'

export type { ZkClient, ZkErrorLike, ZkEvent, ZkStat } from './zk-client.js'
export type { ConnectionState } from './zk-connection.js'
export { curatorPath, type ZkLayoutName } from './zk-layout.js'
export { parseConnectString, parseZookeeperUrl, type ZkConnectString } from './zookeeper-url.js'
export { ZookeeperBackend }

/** Options of {@link zookeeperBackend}: a connect string (the backend opens and closes its client) or a client. */
export interface ZookeeperBackendOptions {
  /**
   * `host:port[,host:port...][/chroot]`, e.g. `127.0.0.1:2181`. Required unless `client` is given. A chroot is
   * created when missing (as Curator's namespace is): locks live under `<chroot><root>`.
   */
  connectString?: string
  /**
   * Session timeout asked of the server (it clamps it to [2, 20] x tickTime). It bounds how long a crashed or
   * partitioned holder keeps a lock. Default 10 000.
   */
  sessionTimeoutMs?: number
  /** How long to wait for a session before failing with `BackendUnavailableError`. Default: `sessionTimeoutMs`. */
  connectTimeoutMs?: number
  /**
   * An open `node-zookeeper-client` client to use instead of `connectString`. It is never closed by the backend,
   * and cannot be replaced after its session expires: make a new client and backend then.
   */
  client?: ZkClient
  /** Znode under which lock nodes live (`/` for the top level). Default `/latchkey`. */
  root?: string
  /**
   * `latchkey` (default) or `curator`: the znode names, sort order and paths of Apache Curator's recipes, so Java
   * services using Curator and latchkey exclude each other on the same paths. The lock `namespace:name` is then
   * the path under `root`, `/` separating znodes: `locks.mutex('orders/42')` with `root: '/locks'` is Curator's
   * `new InterProcessMutex(client, "/locks/orders/42")`. mutex and fair: `InterProcessMutex`
   * (`_c_<uuid>-lock-<seq>`); `readWrite`: `InterProcessReadWriteLock` (`__READ__` / `__WRIT__`); semaphore:
   * `InterProcessSemaphoreV2` (`<path>/locks`, `<path>/leases/_c_<uuid>-lease-<seq>`), with the same permits on
   * every client. Fencing tokens stay the czxid of the holder's node (of the lease node for a semaphore): a line is
   * granted in creation order, and lease nodes are created one at a time under the semaphore's internal mutex.
   * Curator's nodes hold no latchkey lease (their data is the creator's address): they hold until their session ends.
   */
  layout?: ZkLayoutName
  /** How long an emptied lock node is kept (for reuse) before this process deletes it. Default 2 000. */
  lockNodeIdleMs?: number
}

/**
 * Locks on ZooKeeper (3.5+), Curator's recipes on latchkey's own client (wire/zk-wire-client.ts), or on a
 * `node-zookeeper-client` handed in as `client`: each lease attempt is a protected
 * EPHEMERAL_SEQUENTIAL node `<root>/<lock>/_c_<owner>-<kind>-<seq>`, the lowest eligible node holds, and every
 * waiter watches only the node that must go before it can hold (no herd; an exclusive waiter also the node two ahead,
 * so that it lists the line while the holder before it holds, and is granted on the next deletion event with no
 * listing: zk-first-in-line.ts). Fencing tokens are the holder node's
 * czxid. All kinds: mutex, fair (ZooKeeper order is FIFO anyway), read/write (readers wait only for earlier
 * writers), semaphore.
 *
 * A lease ends at the earliest of: release; the TTL running out without renewal (judged by the server's
 * clock from the node's mtime, enforced by the next contender); the session ending (crash, partition longer
 * than the session timeout, expiry). The backend runs its own liveness check, because the client does not
 * notice a silent partition: after 2/3 of the session timeout without a reply the session is suspect, after
 * the full timeout it is lost, renewals fail, and a new session is opened for later calls. (latchkey's own client
 * also leaves a server silent for 2/3 of the timeout for another one, taking the session along, as ZooKeeper's Java
 * client does.) The core watches
 * every lease it grants (`watchLease`), so a lost session aborts `lease.signal` at once, and a node deleted
 * behind the holder's back (forceRelease) at once or, on a lease younger than 100 ms that did not wait (a waiter
 * watches its own node from its first wait), when it reaches that age (an uncontended holder watches its own node
 * only then: a shorter hold costs no watch), not at the next renewal, whatever `ttlMs`.
 * Lock-delay is not supported: a crashed holder's session expiry deletes its node at once. Needs no client package
 * (`node-zookeeper-client` 1.x only for `client`). Emptied lock nodes are deleted after `lockNodeIdleMs`.
 *
 * A child of a lock node that latchkey cannot parse (another client's) is an exclusive holder at its place in line,
 * never ignored. With `layout: 'curator'` the nodes are Apache Curator's (`InterProcessMutex`,
 * `InterProcessReadWriteLock`, `InterProcessSemaphoreV2`: names, sort order, the semaphore's `leases` and `locks`),
 * on the path `<root>/<namespace:name>`, so Curator's Java clients and latchkey exclude each other; see the option.
 *
 * @example
 * const backend = zookeeperBackend({ connectString: '127.0.0.1:2181', sessionTimeoutMs: 10_000 })
 * const locks = createLocks({ backend, ttlMs: 10_000 })
 * await locks.mutex('order:42').withLock(async (lease) => pay(order, { fence: lease.token }))
 * await locks.close(); await backend.close()
 *
 * @example
 * // The lock a Java service takes with new InterProcessMutex(curator, "/locks/orders/42"):
 * const shared = createLocks({ backend: zookeeperBackend({ connectString, layout: 'curator', root: '/locks' }) })
 * await shared.mutex('orders/42').withLock(ship)
 */
export function zookeeperBackend(options: ZookeeperBackendOptions): ZookeeperBackend {
  const o = checkOptions('options', options) as ZookeeperBackendOptions
  if (o.client === undefined && (typeof o.connectString !== 'string' || o.connectString.length === 0)) {
    throw new TypeError(
      `latchkey: zookeeperBackend needs options.connectString ("host:port,...") or options.client, received connectString ${String(o.connectString)}`,
    )
  }
  const sessionTimeoutMs = o.sessionTimeoutMs ?? 10_000
  if (typeof sessionTimeoutMs !== 'number' || !Number.isFinite(sessionTimeoutMs) || sessionTimeoutMs < 1_000) {
    throw new RangeError(`latchkey: sessionTimeoutMs must be a number >= 1000, received ${String(sessionTimeoutMs)}`)
  }
  const connectTimeoutMs = o.connectTimeoutMs ?? sessionTimeoutMs
  if (typeof connectTimeoutMs !== 'number' || !Number.isFinite(connectTimeoutMs) || connectTimeoutMs <= 0) {
    throw new RangeError(`latchkey: connectTimeoutMs must be a positive number, received ${String(connectTimeoutMs)}`)
  }
  const root = o.root ?? '/latchkey'
  if (typeof root !== 'string' || !/^((\/[^/]+)+|\/)$/.test(root)) {
    throw new RangeError(`latchkey: root must be an absolute znode path like "/latchkey", received ${String(root)}`)
  }
  const layout = o.layout ?? 'latchkey'
  if (layout !== 'latchkey' && layout !== 'curator') {
    throw new RangeError(`latchkey: layout must be "latchkey" or "curator", received ${String(layout)}`)
  }
  // A chroot becomes part of the root, as Curator's namespace: the backend then creates it when missing
  // (a client chrooted to a missing node fails every call with NO_NODE and cannot create its own root).
  const cs = o.client === undefined ? parseConnectString(o.connectString as string) : undefined
  const lockNodeIdleMs = o.lockNodeIdleMs ?? 2_000
  if (typeof lockNodeIdleMs !== 'number' || !Number.isFinite(lockNodeIdleMs) || lockNodeIdleMs < 0) {
    throw new RangeError(`latchkey: lockNodeIdleMs must be a number >= 0, received ${String(lockNodeIdleMs)}`)
  }
  return new ZookeeperBackend({
    connectString: cs?.hosts,
    client: o.client,
    sessionTimeoutMs,
    connectTimeoutMs,
    server: cs?.hosts ?? zkServers(o.client as ZkClient),
    root: `${cs?.chroot ?? ''}${root === '/' ? '' : root}`,
    lockNodeIdleMs,
    layout: zkLayoutNamed(layout),
  })
}
