import { setMaxListeners } from 'node:events'
import { defineCapabilities } from '../backend/backend-base.js'
import type { LockInspection, LockSummary } from '../backend/inspection.js'
import type { Backend, LockKind } from '../backend/types.js'
import { UnsupportedError } from '../errors.js'
import { ActiveLeases } from './active-leases.js'
import type { LocksContext } from './context.js'
import type { LockEventHandler } from './events.js'
import type { Leader, LeaderOptions } from './leader-types.js'
import { LeaseTimers } from './lease-timers.js'
import { type Lock, LockHandle } from './lock.js'
import { lockKey } from './lock-key.js'
import { canonicalHandles, MultiLock } from './multi.js'
import { openLeader } from './open-leader.js'
import { type ListOptions, operatorCalls } from './operator.js'
import {
  checkBoolean,
  checkDuration,
  checkFunction,
  checkInteger,
  checkName,
  checkOptions,
  checkUnavailableMs,
  MAX_NAME_BYTES,
  MAX_TIMER_MS,
} from './validate.js'

/** Options of {@link createLocks}. */
export interface LocksOptions {
  /** Where locks live, e.g. `memoryBackend()`, `sqliteBackend({ path })`, `redisBackend({ client })`. */
  backend: Backend
  /**
   * Prefix of every lock name in the backend: the key is `namespace:name`, with `%` and `:` in the namespace
   * escaped (`%25`, `%3A`) so that two namespaced names never meet. Default: none (the key is the name verbatim).
   */
  namespace?: string
  /** Default lease length. Default 30 000. */
  ttlMs?: number
  /** Default wait for `acquire`/`withLock`. Default `Infinity`. */
  waitMs?: number
  /**
   * An acquire whose backend has answered nothing (not even "held") for this long rejects with
   * `BackendUnavailableError`, whatever `waitMs` is (Redisson's and Curator's blocking acquires wait through an
   * outage forever). `Infinity` waits through any outage. Default 30 000.
   */
  unavailableMs?: number
  /** Chubby's lock-delay: an expired, unreleased lock stays unavailable this long. Default 0. */
  lockDelayMs?: number
  /** Fail now, with `UnsupportedError`, unless the backend issues fencing tokens. Default false. */
  requireFencing?: boolean
  /** Longest poll interval when the backend cannot push releases across processes. Default 100. */
  maxPollMs?: number
  /** How long a waiter's place in line (fair locks, waiting writers) outlives a crashed waiter. Default 5 000. */
  queueTtlMs?: number
  /** Receives acquired / released / renewed / lost / timeout ... events (e.g. for metrics). */
  onEvent?: LockEventHandler
}

/** The lock factory returned by {@link createLocks}. */
export interface Locks {
  readonly backend: Backend
  /** An exclusive, reentrant lock. */
  mutex(name: string): Lock
  /** An exclusive lock granted in request order (FIFO). */
  fairMutex(name: string): Lock
  /** A read-write lock: readers share, a writer excludes everyone, a waiting writer blocks new readers. */
  readWrite(name: string): { readonly read: Lock; readonly write: Lock }
  /** A counting semaphore: at most `permits` holders at once, each with its own lease. */
  semaphore(name: string, options: { permits: number }): Lock
  /** All of `locks` or none, taken in a canonical order (no deadlock whatever the order given). */
  multi(locks: readonly Lock[]): Lock
  /**
   * Operator: the holders (owner, kind, token, expiry) and stored waiters of lock `name` as the backend stores
   * them, its mutex/read-write family and its semaphore together. Rejects with `UnsupportedError` where the
   * backend cannot inspect (`capabilities.inspect`).
   *
   * @example
   * const { kind, holders, waiters } = await locks.inspect('order:42')
   */
  inspect(name: string): Promise<LockInspection>
  /** Operator: the locks of this namespace held or waited on, names starting with `prefix`, at most `limit` (default 100). */
  list(options?: ListOptions): Promise<LockSummary[]>
  /**
   * Operator: drops every holder and waiter of lock `name` (family and semaphore). The holders' `lease.signal`
   * aborts with `LockLostError`, as for a lost lease; session-based backends end the holders' sessions. True if
   * anything was held.
   */
  forceRelease(name: string): Promise<boolean>
  /**
   * Joins the leader election `name` (Curator's `LeaderLatch`, etcd's election): contends for the mutex `name` until
   * `close()`; the holder leads, one term per lease, each with its own `signal` and a higher `token`.
   */
  leader(name: string, options?: LeaderOptions): Leader
  /** Releases every lease this instance holds, rejects its pending acquires, stops its timers. Leaves the backend open. */
  close(): Promise<void>
}

let nextId = 1

const BACKEND_METHODS = ['tryAcquire', 'renew', 'release', 'leaveQueue', 'isLocked', 'forceRelease', 'close'] as const

function checkBackend(value: unknown): Backend {
  const b = value as Partial<Backend> | undefined
  const missing = BACKEND_METHODS.filter((m) => typeof b?.[m] !== 'function')
  if (typeof b !== 'object' || b === null || missing.length > 0 || typeof b.capabilities !== 'object') {
    throw new TypeError(
      `latchkey: backend must be a latchkey backend such as memoryBackend()${missing.length > 0 ? ` (missing ${missing.join(', ')})` : ''}`,
    )
  }
  return b as Backend
}

/**
 * Creates the lock factory over one backend. No I/O happens until a lock is acquired.
 *
 * @example
 * const locks = createLocks({ backend: sqliteBackend({ path: './locks.db' }), namespace: 'shop' })
 * await locks.mutex('order:42').withLock(async (lease) => pay(order, { signal: lease.signal }))
 */
export function createLocks(options: LocksOptions): Locks {
  const o = checkOptions('options', options)
  const backend = checkBackend(o.backend)
  // A backend written before a capability existed is read with that capability's default.
  const capabilities = defineCapabilities(backend.capabilities)
  const namespace = o.namespace === undefined ? '' : checkName('namespace', o.namespace, true)
  const closer = new AbortController()
  // Every pending acquire listens for close(); there may be thousands.
  setMaxListeners(0, closer.signal)
  const ctx: LocksContext = Object.freeze({
    backend,
    id: nextId++,
    namespace,
    ttlMs: o.ttlMs === undefined ? 30_000 : checkDuration('ttlMs', o.ttlMs, { min: 1, max: MAX_TIMER_MS }),
    waitMs: o.waitMs === undefined ? Number.POSITIVE_INFINITY : checkDuration('waitMs', o.waitMs, { infinite: true }),
    unavailableMs: o.unavailableMs === undefined ? 30_000 : checkUnavailableMs(o.unavailableMs),
    lockDelayMs: o.lockDelayMs === undefined ? 0 : checkDuration('lockDelayMs', o.lockDelayMs),
    maxPollMs: o.maxPollMs === undefined ? 100 : checkDuration('maxPollMs', o.maxPollMs, { min: 1, max: MAX_TIMER_MS }),
    queueTtlMs:
      o.queueTtlMs === undefined ? 5_000 : checkDuration('queueTtlMs', o.queueTtlMs, { min: 30, max: MAX_TIMER_MS }),
    onEvent: o.onEvent === undefined ? undefined : checkFunction<LockEventHandler>('onEvent', o.onEvent),
    closing: closer.signal,
    active: new ActiveLeases(),
    timers: new LeaseTimers(),
    tries: new LeaseTimers(true),
  })
  const requireFencing = o.requireFencing === undefined ? false : checkBoolean('requireFencing', o.requireFencing)
  if (requireFencing && capabilities.fencing !== 'native') {
    throw new UnsupportedError(
      `The ${backend.name} backend issues no fencing tokens (capabilities.fencing is "${capabilities.fencing}"); use a backend with native fencing (memory, SQLite, Redis, ZooKeeper, etcd, SQL tables) for resources that must reject stale writers`,
    )
  }
  if (ctx.lockDelayMs > 0 && !capabilities.lockDelay) {
    throw new UnsupportedError(`The ${backend.name} backend does not support lockDelayMs; leave it at 0`)
  }

  // A handle is made per call on hot paths (`locks.mutex(name).acquire()`): the escaped namespace is made once.
  const keyPrefix = lockKey(namespace, '')
  const handle = (name: unknown, kind: LockKind, permits = 1): LockHandle => {
    const checked = checkName('name', name)
    const key = namespace === '' ? checked : keyPrefix + checked
    // A UTF-16 code unit is at most 3 UTF-8 bytes: short keys need no byte count.
    if (key.length * 3 > MAX_NAME_BYTES && Buffer.byteLength(key) > MAX_NAME_BYTES) {
      throw new RangeError(
        `latchkey: namespace + name must be at most ${MAX_NAME_BYTES} bytes, received ${Buffer.byteLength(key)} bytes`,
      )
    }
    if (!capabilities.kinds.includes(kind)) {
      throw new UnsupportedError(`The ${backend.name} backend does not support ${kind} locks`, { lockName: checked })
    }
    return new LockHandle(ctx, checked, key, kind, permits)
  }

  let closing: Promise<void> | undefined
  return Object.freeze({
    backend,
    ...operatorCalls(backend, capabilities, namespace),
    mutex: (name: string) => handle(name, 'mutex'),
    fairMutex: (name: string) => handle(name, 'fair'),
    readWrite: (name: string) => Object.freeze({ read: handle(name, 'read'), write: handle(name, 'write') }),
    semaphore: (name: string, opts: { permits: number }) => {
      const permits = checkInteger('permits', checkOptions('options', opts).permits, 1)
      return handle(name, 'semaphore', permits)
    },
    multi: (locks: readonly Lock[]) => new MultiLock(canonicalHandles(locks)),
    leader: (name: string, opts?: LeaderOptions) => openLeader(handle(name, 'mutex'), opts),
    close: () => {
      closing ??= (async () => {
        closer.abort()
        await Promise.all(ctx.active.values().map((lease) => lease.forget()))
        ctx.timers.close()
      })()
      return closing
    },
  })
}
