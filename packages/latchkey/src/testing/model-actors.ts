import type { AcquireResult, Backend, LockKind } from '../backend/types.js'
import type { Lease } from '../core/lease.js'
import type { Lock } from '../core/lock.js'
import { createLocks, type Locks } from '../core/locks.js'
import type { KindGroup } from './grant-model.js'

/** A waiting acquire an actor started, and how it ended so far. */
export interface PendingWait {
  readonly kind: LockKind
  readonly abort: AbortController
  readonly done: Promise<void>
  state: 'pending' | 'granted' | 'failed'
  lease?: Lease
  error?: unknown
}

/** One client of the lock: its own `Locks`, the lease it holds or the acquire it waits in. */
export interface Actor {
  readonly id: string
  readonly locks: Locks
  /** Answers "not granted" its backend gave so far: a waiter has joined the line once its first try answered. */
  refusals: number
  /** Backend calls under way: an acquire that ran out while a try was out gives its grant or place back after. */
  calls: number
  lease?: Lease | undefined
  wait?: PendingWait | undefined
}

/** Makes `Locks` whose backend counts the actor's refused tries and calls under way, over the suite's backend and namespace. */
export function createActor(id: string, backend: Backend, namespace: string): Actor {
  const actor: Actor = {
    id,
    refusals: 0,
    calls: 0,
    locks: createLocks({ backend: observed(backend, () => actor), namespace }),
  }
  return actor
}

/** The handle of `kind` on `name` in the actor's `Locks`. */
export function handleOf(actor: Actor, group: KindGroup, kind: LockKind, name: string, permits: number): Lock {
  if (group === 'semaphore') return actor.locks.semaphore(name, { permits })
  if (group === 'fair') return actor.locks.fairMutex(name)
  if (group === 'rw') return kind === 'write' ? actor.locks.readWrite(name).write : actor.locks.readWrite(name).read
  return actor.locks.mutex(name)
}

/** Starts a waiting acquire; its outcome is recorded on the returned object, never thrown. */
export function startWait(lock: Lock, kind: LockKind, options: { waitMs: number; ttlMs: number }): PendingWait {
  const abort = new AbortController()
  const wait: Partial<PendingWait> & { state: PendingWait['state'] } = { kind, abort, state: 'pending' }
  const done = lock.acquire({ ...options, autoRenew: false, signal: abort.signal }).then(
    (lease) => {
      wait.state = 'granted'
      wait.lease = lease
    },
    (error: unknown) => {
      wait.state = 'failed'
      wait.error = error
    },
  )
  return Object.assign(wait, { done }) as PendingWait
}

/** Gives up whatever the actor waits for and holds, and closes its `Locks`; never throws. */
export async function retireActor(actor: Actor): Promise<void> {
  if (actor.wait !== undefined) {
    actor.wait.abort.abort(new Error('grant model: run over'))
    await actor.wait.done
    await actor.wait.lease?.release().catch(() => undefined)
  }
  await actor.lease?.release().catch(() => undefined)
  await actor.locks.close()
}

/**
 * Resolves once `done()` holds, polling every few ms; rejects naming `what` after `ms`. Polls only this
 * process's own state (an answer recorded by a callback), so the interval orders nothing.
 */
export async function until(done: () => boolean, ms: number, what: string): Promise<void> {
  const ends = performance.now() + ms
  while (!done()) {
    if (performance.now() > ends) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
}

/** Delegates every call to `inner` (never closing it), counting the actor's refusals and calls under way. */
function observed(inner: Backend, actor: () => Actor): Backend {
  const counted =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      actor().calls++
      try {
        return await call(...args)
      } finally {
        actor().calls--
      }
    }
  const backend: Backend = {
    name: inner.name,
    capabilities: inner.capabilities,
    tryAcquire: counted(async (request) => {
      const result: AcquireResult = await inner.tryAcquire(request)
      if (!result.acquired) actor().refusals++
      return result
    }),
    renew: counted((request) => inner.renew(request)),
    release: counted((request) => inner.release(request)),
    leaveQueue: counted((request) => inner.leaveQueue(request)),
    isLocked: counted((ref) => inner.isLocked(ref)),
    forceRelease: counted((ref) => inner.forceRelease(ref)),
    close: async () => undefined,
  }
  const { subscribe, watchLease } = inner
  if (subscribe !== undefined) backend.subscribe = (ref, owner) => subscribe.call(inner, ref, owner)
  if (watchLease !== undefined) backend.watchLease = (holder, onLost) => watchLease.call(inner, holder, onLost)
  return backend
}

/** What an actor's wait came to, for failure messages. */
export function describe(actor: Actor): string {
  return actor.wait === undefined ? `${actor.id}: no wait` : `${actor.id}: ${describeWait(actor.wait)}`
}

/** What a wait came to, for failure messages. */
export function describeWait(wait: PendingWait): string {
  if (wait.state === 'granted') return `granted token ${wait.lease?.token}`
  if (wait.state === 'failed') return `failed: ${wait.error instanceof Error ? wait.error.message : String(wait.error)}`
  return 'waiting'
}
