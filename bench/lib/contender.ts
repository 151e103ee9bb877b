/**
 * One lock implementation under test, behind one shape, opened inside a bench worker process from a
 * serialisable spec: latchkey on any backend URL (optionally with release notifications hidden, so its core
 * polls), a Redis peer library, or a floor (what the server itself costs per lock+unlock, or the research's
 * wake-one Redis prototype).
 */
import { randomUUID } from 'node:crypto'
// The built package (packages/latchkey/dist, built by session.ts ensureBuilt), as users run it: the sources
// through tsx measured several times slower on the hot path than the same code compiled by tsc.
import type { Backend } from 'latchkey'
import { backendFromUrl, createLocks, isLockError } from 'latchkey'
import { openPeer, type PeerName } from '../redis-peers.js'

/** A held lock. */
export interface Held {
  release(): Promise<unknown>
}

/** A lock implementation as the harness drives it. */
export interface Contender {
  /** Waits up to `waitMs`; undefined when it gave up (its own retry limit, or the wait ran out). */
  acquire(key: string, waitMs: number): Promise<Held | undefined>
  close(): Promise<void>
}

/** The floors (floors.ts). */
export type FloorName =
  | 'znode'
  | 'etcd-txn'
  | 'etcd-txn-wire'
  | 'etcd-line'
  | 'etcd-go'
  | 'proto-blpop'
  | 'redis-fenced'
  | 'zk-recipe'

/** How a worker opens a contender. Keys are always prefixed by `namespace`. */
export type ContenderSpec =
  | {
      type: 'latchkey'
      url: string
      namespace: string
      ttlMs: number
      pollMs?: number
      dist?: string
      /** Backends (sessions) opened in this process, taking acquisitions in turn (default 1). */
      sessions?: number
    }
  | { type: 'peer'; peer: PeerName; url: string; namespace: string; ttlMs: number }
  | {
      type: 'floor'
      floor: FloorName
      url: string
      namespace: string
      ttlMs: number
      /** As latchkey's: floors opened in this process, taking acquisitions in turn (default 1). */
      sessions?: number
    }
  /** Runs in its own JVM (curator-pool.ts), never in a worker. */
  | { type: 'curator'; connect: string; namespace: string; ttlMs: number }

/** Opens `spec` in this process. */
export async function openContender(spec: ContenderSpec): Promise<Contender> {
  if (spec.type === 'peer') return openPeer(spec.peer, spec.url, spec.namespace, spec.ttlMs)
  if (spec.type === 'curator')
    throw new Error('the Curator contender runs in its JVM (curator-pool.ts), not in a worker')
  // Several sessions (latchkey's backends or a floor's connections) in this process, taking acquisitions in turn.
  if ((spec.sessions ?? 1) > 1)
    return inTurn(
      await Promise.all(Array.from({ length: spec.sessions ?? 1 }, () => openContender({ ...spec, sessions: 1 }))),
    )
  if (spec.type === 'floor') {
    const { openFloor } = await import('./floors.js')
    return openFloor(spec.floor, spec.url, spec.namespace, spec.ttlMs)
  }
  // `dist`: another build of the library (a baseline, to compare before and after a change in one run).
  const lib = spec.dist === undefined ? { backendFromUrl, createLocks, isLockError } : await importBuild(spec.dist)
  const opened = await lib.backendFromUrl(spec.url)
  const backend = spec.pollMs === undefined ? opened : polling(opened)
  const locks = lib.createLocks({
    backend,
    namespace: spec.namespace,
    ttlMs: spec.ttlMs,
    ...(spec.pollMs === undefined ? {} : { maxPollMs: spec.pollMs }),
  })
  return {
    async acquire(key, waitMs) {
      const started = performance.now()
      try {
        return await locks.mutex(key).acquire({ waitMs })
      } catch (error) {
        if (lib.isLockError(error) && error.code === 'LOCK_TIMEOUT') return undefined
        // The window ended while a try was out: on a loaded host a try sent just before the end is often still
        // unanswered then, and the core says "unavailable" rather than "held". That is the end of the window, not
        // an outage; a real outage fails before it.
        if (lib.isLockError(error) && error.code === 'BACKEND_UNAVAILABLE' && performance.now() - started >= waitMs) {
          return undefined
        }
        throw error
      }
    },
    async close() {
      await locks.close()
      await backend.close()
    },
  }
}

/**
 * Several contenders in one process, each acquisition taken by the next in turn: a process holding several sessions
 * (as Curator's bench holds its clients in one JVM).
 */
function inTurn(all: Contender[]): Contender {
  let next = 0
  return {
    acquire(key, waitMs) {
      const c = all[next++ % all.length] as Contender
      return c.acquire(key, waitMs)
    },
    async close() {
      await Promise.all(all.map((c) => c.close()))
    },
  }
}

/** The entry points of the library build in folder `dist` (its `index.js`). */
async function importBuild(dist: string) {
  return (await import(`${dist}/index.js`)) as {
    backendFromUrl: typeof backendFromUrl
    createLocks: typeof createLocks
    isLockError: typeof isLockError
  }
}

/**
 * The same backend without its release notifications: the core then polls (backoff from 2 ms up to
 * `maxPollMs`, jittered), as spinning clients do (docs/background.md#polling-clients). Built on the public Backend contract only.
 */
export function polling(inner: Backend): Backend {
  return {
    name: `${inner.name}-polling`,
    capabilities: { ...inner.capabilities, notifications: 'none' },
    tryAcquire: (r) => inner.tryAcquire(r),
    renew: (r) => inner.renew(r),
    release: (r) => inner.release(r),
    leaveQueue: (r) => inner.leaveQueue(r),
    isLocked: (r) => inner.isLocked(r),
    forceRelease: (r) => inner.forceRelease(r),
    close: () => inner.close(),
    ...(inner.watchLease === undefined ? {} : { watchLease: inner.watchLease.bind(inner) }),
  }
}

/** A namespace unique to one bench run. */
export const runNamespace = (): string => `lkbench-${randomUUID().slice(0, 8)}`
