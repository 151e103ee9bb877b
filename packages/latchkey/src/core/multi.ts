/**
 * `multi(locks)`: all-or-nothing over several locks (Redisson's RedissonMultiLock), from one backend or many.
 * Locks are always taken in one canonical order (backend instance, name, kind), so two callers passing the
 * same locks in opposite orders cannot deadlock; a failure part-way releases what was taken. Parts that are one
 * lock (a read and a write of one name, ...) are collapsed or rejected up front: a caller must never wait for itself.
 */
import { stateKey } from '../backend/grant-rules.js'
import type { Backend, LockKind } from '../backend/types.js'
import { monotonicNow } from './clock.js'
import type { Lease } from './lease.js'
import { type AcquireOptions, type Lock, LockHandle, resolveSettings, runWithLeases } from './lock.js'
import { checkFunction, checkOptions } from './validate.js'

function order(a: LockHandle, b: LockHandle): number {
  return (
    a.ctx.id - b.ctx.id || (a.key < b.key ? -1 : a.key > b.key ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0)
  )
}

/** A handle and the index in `locks` it came from (for messages). */
type Part = { readonly handle: LockHandle; readonly index: number }

/**
 * Flattens nested multi-locks, drops duplicates, collapses or rejects parts that name one lock, and sorts into
 * the canonical order. Throws before any I/O.
 */
export function canonicalHandles(locks: unknown): LockHandle[] {
  if (!Array.isArray(locks)) throw new TypeError(`latchkey: locks must be an array of locks, received ${typeof locks}`)
  if (locks.length === 0) throw new RangeError('latchkey: locks must name at least one lock, received an empty array')
  const parts: Part[] = []
  for (const [index, lock] of locks.entries()) {
    if (lock instanceof MultiLock) parts.push(...lock.handles.map((handle) => ({ handle, index })))
    else if (lock instanceof LockHandle) parts.push({ handle: lock, index })
    else throw new TypeError(`latchkey: locks[${index}] must be a lock made by createLocks(), received ${typeof lock}`)
  }
  parts.sort((a, b) => order(a.handle, b.handle))
  const unique = parts.filter((p, i) => i === 0 || order((parts[i - 1] as Part).handle, p.handle) !== 0)
  return withoutOverlaps(unique).map((p) => p.handle)
}

/**
 * Parts that name one lock state of one backend. On every backend the mutex, fair mutex and read-write kinds of a
 * name share one state (a holder of any exclusive kind excludes all of them) and a semaphore of the name lives
 * apart. Within that state one caller could wait for itself forever, so: a read beside a write of the same
 * `Locks` is dropped (the write covers it: it excludes every other holder); two reads of two `Locks` share; two
 * semaphore permits fit when the semaphore has at least two; anything else is rejected.
 */
function withoutOverlaps(parts: readonly Part[]): Part[] {
  const groups = new Map<Backend, Map<string, Part[]>>()
  for (const part of parts) {
    const { backend } = part.handle.ctx
    const byState = groups.get(backend) ?? new Map<string, Part[]>()
    groups.set(backend, byState)
    const state = stateKey(part.handle)
    byState.set(state, [...(byState.get(state) ?? []), part])
  }
  const dropped = new Set<Part>()
  for (const group of [...groups.values()].flatMap((byState) => [...byState.values()])) {
    for (const [i, a] of group.entries()) {
      for (const b of group.slice(i + 1)) {
        if (dropped.has(a) || dropped.has(b)) continue
        const covered = coveredOf(a.handle, b.handle)
        if (covered === 'a') dropped.add(a)
        else if (covered === 'b') dropped.add(b)
        else if (covered !== 'both') throw overlapError(a, b)
      }
    }
  }
  return parts.filter((p) => !dropped.has(p))
}

/** Which of two parts in one lock state may be dropped ('a' / 'b'), 'both' kept, or undefined (cannot hold both). */
function coveredOf(a: LockHandle, b: LockHandle): 'a' | 'b' | 'both' | undefined {
  if (a.ctx === b.ctx) {
    if (a.kind === 'read' && b.kind === 'write') return 'a'
    if (a.kind === 'write' && b.kind === 'read') return 'b'
    return undefined
  }
  if (a.kind === 'read' && b.kind === 'read') return 'both'
  if (a.kind === 'semaphore' && b.kind === 'semaphore' && Math.min(a.permits, b.permits) >= 2) return 'both'
  return undefined
}

function overlapError(a: Part, b: Part): RangeError {
  const show = (p: Part) => `locks[${p.index}] (${KIND_NAMES[p.handle.kind]} "${p.handle.name}")`
  const why =
    a.handle.ctx === b.handle.ctx
      ? 'a mutex, a fair mutex and a read-write lock of one name are one lock in every backend'
      : 'two Locks instances over one backend take it twice'
  return new RangeError(
    `latchkey: ${show(a)} and ${show(b)} cannot be held together by one caller: ${why}, and the second would wait for the first forever; pass one of them`,
  )
}

const KIND_NAMES: Readonly<Record<LockKind, string>> = {
  mutex: 'mutex',
  fair: 'fair mutex',
  read: 'read lock',
  write: 'write lock',
  semaphore: 'semaphore',
}

/** A lease over several locks: aborts when any part is lost; `token` is the highest part's token. */
export class MultiLease implements Lease {
  readonly name: string
  readonly token: bigint
  readonly signal: AbortSignal
  readonly owner: string

  constructor(readonly leases: readonly Lease[]) {
    this.name = leases.map((l) => l.name).join('+')
    this.owner = leases.map((l) => l.owner).join(',')
    this.token = leases.reduce((max, l) => (l.token > max ? l.token : max), 0n)
    this.signal = AbortSignal.any(leases.map((l) => l.signal))
  }

  get expiresAt(): number {
    return Math.min(...this.leases.map((l) => l.expiresAt))
  }

  async extend(ttlMs?: number): Promise<void> {
    await Promise.all(this.leases.map((l) => l.extend(ttlMs)))
  }

  async release(): Promise<void> {
    const results = await Promise.allSettled([...this.leases].reverse().map((l) => l.release()))
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release()
  }
}

/** The lock returned by `locks.multi([...])`. */
export class MultiLock implements Lock {
  readonly name: string

  constructor(readonly handles: readonly LockHandle[]) {
    this.name = handles.map((h) => h.name).join('+')
  }

  async acquire(options?: AcquireOptions): Promise<MultiLease> {
    const first = this.handles[0] as LockHandle
    const settings = resolveSettings(first.ctx, options, true)
    const started = monotonicNow()
    return this.take(async (handle) => {
      const waitMs = Math.max(0, settings.waitMs - (monotonicNow() - started))
      return handle.acquire({ ...withoutUndefined(checkOptions('options', options)), waitMs })
    })
  }

  async tryAcquire(options?: Omit<AcquireOptions, 'waitMs'>): Promise<MultiLease | undefined> {
    resolveSettings((this.handles[0] as LockHandle).ctx, options, false)
    try {
      return await this.take(async (handle) => {
        const lease = await handle.tryAcquire(options)
        if (lease === undefined) throw NOT_FREE
        return lease
      })
    } catch (error) {
      if (error === NOT_FREE) return undefined
      throw error
    }
  }

  async withLock<T>(fn: (lease: Lease) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    checkFunction('fn', fn)
    const lease = await this.acquire(options)
    const pairs = this.handles.map((h, i) => [h, lease.leases[i] as Lease] as const)
    return runWithLeases(pairs, () => fn(lease))
  }

  async isLocked(): Promise<boolean> {
    const states = await Promise.all(this.handles.map((h) => h.isLocked()))
    return states.some(Boolean)
  }

  /** Takes every part in order; on any failure releases the parts already taken, then rethrows. */
  private async take(one: (handle: LockHandle) => Promise<Lease>): Promise<MultiLease> {
    const leases: Lease[] = []
    try {
      for (const handle of this.handles) leases.push(await one(handle))
    } catch (error) {
      await Promise.allSettled(leases.reverse().map((l) => l.release()))
      throw error
    }
    return new MultiLease(leases)
  }
}

const NOT_FREE = Symbol('not free')

function withoutUndefined(o: Record<string, unknown>): AcquireOptions {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as AcquireOptions
}
