/**
 * The etcd v3 backend (`latchkey/etcd`), built on etcd's raw lease, txn and watch RPCs (over its own gRPC
 * transport, `wire/`, unless given an etcd3 client); not on etcd3's `Lock`, which is a try-lock with no queue
 * whose lease reports loss only after 2 x TTL.
 *
 * Choices, and why:
 * - **A lease per owner, not one session lease per process.** Go's `concurrency.Session` keeps one lease alive
 *   for every lock of a process, so a lock would never expire while its process lives: the contract's per-lock
 *   `ttlMs`, `autoRenew: false` and "a holder that stops renewing loses the lock" need a lease per acquisition.
 *   TTL = ceil(ttlMs / 1000) s (etcd leases are whole seconds, and etcd may raise small TTLs to its minimum,
 *   1.5 x election timeout). The core's own deadline (`sentAt + ttlMs - drift`) always ends first, so
 *   `lease.signal` aborts before etcd frees the key. `renew()` sends one keepalive and answers false when etcd
 *   answers TTL 0 or the key is gone (deleted or re-created) - never relying on etcd3's `lost` event.
 *   Cost: a lease per acquisition, softened by keeping released leases as spares (a keepalive, which etcd's
 *   leader answers from memory, instead of a grant and a revoke, two raft writes); a miss keeps its lease for
 *   the owner's next try and refreshes it only after winning.
 * - **Who keeps a key while waiting.** Only a waiting fair/write request (`request.queue`, which the core ends
 *   with `leaveQueue`) keeps its key between tries: that key is its place in line, on a lease of
 *   ceil(queueTtlMs / 1000) s refreshed by its tries, so the place of a crashed waiter runs out by itself.
 *   Waiting mutex acquires take turns in their process, oldest first, and only the first of a name asks etcd
 *   (`local-mutex-turns.ts`): it keeps a key in line as a fair waiter does, but on the lease it will hold with (TTL of
 *   `ttlMs`), so its grant needs no write; the watch follows the keys before it and wakes it when the last one
 *   goes (`mutex-line.ts`). So a release costs one try per process with waiters, not one per waiter, and a
 *   crashed process's waiting key lasts up to its TTL, as a crashed holder's lock does. Behind a holder of its own
 *   process, that first waiter goes in line with the holder's release, in the same txn (one raft write per
 *   contended acquisition), and a lease refreshed less than 5% of its TTL (at most 500 ms) ago is granted as it
 *   stands, timed from that refresh, so most handoffs send no keepalive. Read and semaphore
 *   waiters keep no key: their tries write nothing unless they win (a range compare in the txn), and they are not
 *   FIFO - the same as the memory backend. The core's `leaveQueue` when a waiter gives up revokes its lease (and
 *   with it its key, if any).
 * - **Grant rules.** mutex/fair/write: no key at all under the name (holders and queued waiters); read: no
 *   mutex/fair/write key (so a waiting writer blocks new readers); semaphore: a free permit slot
 *   (`.../semaphore/<0..permits-1>`, one compare per slot, so acquirers of different permits never conflict); a queued
 *   waiter: no family key older than its own. Difference from the embedded backends: a queued fair/write/mutex
 *   waiter also blocks plain mutex/read tries (it is the next holder, Go-style), which only makes them stricter.
 * - **Notifications.** One delete-only watch per lock name and process; readers wake on exclusive deletes, queued
 *   waiters on their predecessor's delete (a waiting mutex, on the delete of the last key before it). Lock-delay is not implemented (`lockDelay: false`).
 * - **`layout: 'etcd'`: Go's keys.** The same algorithm on the keys of Go's `concurrency.Mutex` (`etcdctl lock
 *   <name>`): `<name>/<lease hex>` for mutex, fair and write, `<name>/read/<lease hex>` for readers,
 *   `<name>/semaphore/<permits>.<n>` for permits, the lock key verbatim as Go's name. Go waits for every key
 *   under `<name>/` older than its own, so every latchkey holder blocks it; latchkey takes every key outside
 *   `read/` and `semaphore/` for an exclusive holder or waiter, so Go's holders and waiters block the mutex, fair
 *   and read-write kinds. Go writes empty values, latchkey its owner id: a permit waits only for the empty ones
 *   (Go's), since a semaphore lives apart from latchkey's mutex of its name. A waiting fair mutex or writer is in
 *   Go's line, and so is the first waiting plain mutex of each process. Details and the per-kind
 *   table: `go-mutex-layout.ts`, README "Where a lock lives".
 */
import { shownUrl } from '../../backend/url-parts.js'
import { EtcdBackend, type EtcdBackendOptions } from './etcd-backend.js'
import type { EtcdClient, EtcdCompare } from './etcd-client.js'
import { checkEtcdHosts } from './etcd-url.js'
import type { EtcdHolderGuard } from './holder-guard.js'

export { checkEtcdHosts, parseEtcdUrl } from './etcd-url.js'

export { EtcdBackend, type EtcdBackendOptions, type EtcdClient, type EtcdCompare, type EtcdHolderGuard }

/**
 * Locks in etcd v3 (3.4+), shared by every process that reaches the cluster. Pass an `etcd3` client
 * (`new Etcd3({ hosts })`, never closed by the backend) or `hosts` (default prefix `latchkey`, each call's
 * deadline `callTimeoutMs` = 2 000); a client opened from `hosts` fails fast (no client-side retries or circuit
 * breaker: the core retries) and is closed by `backend.close()`. An unreachable etcd rejects with
 * `BackendUnavailableError`. Fencing tokens are the holder key's create revision; `backend.holderGuard()` gives
 * a txn compare for writes to etcd itself. `layout` (default `'latchkey'`): `'etcd'` keeps locks in the keys of
 * Go's `concurrency.Mutex`, so `etcdctl lock <name>` and Go services exclude latchkey holders of the lock key
 * `<name>` (no prefix unless `prefix` is given).
 *
 * @example
 * const backend = etcdBackend({ hosts: 'http://127.0.0.1:2379' })
 * const locks = createLocks({ backend })
 * await locks.mutex('order:42').withLock(async (lease) => ship(order, { fence: lease.token }))
 * await locks.close(); await backend.close()
 *
 * @example
 * // Shared with `etcdctl lock jobs/nightly` and Go's concurrency.NewMutex(session, "jobs/nightly")
 * const shared = createLocks({ backend: etcdBackend({ hosts: 'http://127.0.0.1:2379', layout: 'etcd' }) })
 * await shared.fairMutex('jobs/nightly').withLock(runNightly)
 */
export function etcdBackend(input: EtcdBackendOptions): EtcdBackend {
  let options = input
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`latchkey: etcdBackend needs an options object, received ${String(options)}`)
  }
  const hosts = options.hosts
  if (options.client === undefined) {
    const list = typeof hosts === 'string' ? [hosts] : hosts
    if (!Array.isArray(list) || list.length === 0 || list.some((h) => typeof h !== 'string' || h.length === 0)) {
      throw new TypeError(
        `latchkey: etcdBackend needs options.client (an etcd3 client) or options.hosts (e.g. "http://127.0.0.1:2379"), received hosts ${Array.isArray(list) ? list.map((h) => (typeof h === 'string' ? shownUrl(h) : typeof h)).join(', ') : typeof hosts}`,
      )
    }
    options = { ...options, hosts: checkEtcdHosts(list) }
  }
  if (options.layout !== undefined && options.layout !== 'latchkey' && options.layout !== 'etcd') {
    throw new RangeError(
      `latchkey: etcdBackend layout must be 'latchkey' or 'etcd', received ${JSON.stringify(options.layout)}`,
    )
  }
  if (options.prefix !== undefined && (typeof options.prefix !== 'string' || options.prefix.length === 0)) {
    throw new RangeError(`latchkey: prefix must be a non-empty string, received ${JSON.stringify(options.prefix)}`)
  }
  const timeout = options.callTimeoutMs
  if (timeout !== undefined && !(Number.isFinite(timeout) && timeout > 0)) {
    throw new RangeError(`latchkey: callTimeoutMs must be a positive number, received ${String(timeout)}`)
  }
  return new EtcdBackend(options)
}
