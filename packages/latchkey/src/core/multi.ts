/**
 * `multi(locks)`: all-or-nothing over several locks (Redisson's RedissonMultiLock), from one backend or many.
 * Locks are always taken in one canonical order (backend instance, name, kind), so two callers passing the
 * same locks in opposite orders cannot deadlock; a failure part-way releases what was taken.
 */
import { monotonicNow } from './clock.js'
import type { Lease } from './lease.js'
import { type AcquireOptions, type Lock, LockHandle, resolveSettings, runWithLeases } from './lock.js'
import { checkFunction, checkOptions } from './validate.js'

function order(a: LockHandle, b: LockHandle): number {
  return (
    a.ctx.id - b.ctx.id || (a.key < b.key ? -1 : a.key > b.key ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0)
  )
}

/** Flattens nested multi-locks, drops duplicates and sorts into the canonical order. */
export function canonicalHandles(locks: unknown): LockHandle[] {
  if (!Array.isArray(locks)) throw new TypeError(`latchkey: locks must be an array of locks, received ${typeof locks}`)
  if (locks.length === 0) throw new RangeError('latchkey: locks must name at least one lock, received an empty array')
  const handles: LockHandle[] = []
  for (const [i, lock] of locks.entries()) {
    if (lock instanceof MultiLock) handles.push(...lock.handles)
    else if (lock instanceof LockHandle) handles.push(lock)
    else throw new TypeError(`latchkey: locks[${i}] must be a lock made by createLocks(), received ${typeof lock}`)
  }
  handles.sort(order)
  return handles.filter((h, i) => i === 0 || order(handles[i - 1] as LockHandle, h) !== 0)
}

/** A lease over several locks: aborts when any part is lost; `token` is the highest part's token. */
export class MultiLease implements Lease {
  readonly name: string
  readonly token: bigint
  readonly signal: AbortSignal

  constructor(readonly leases: readonly Lease[]) {
    this.name = leases.map((l) => l.name).join('+')
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
