import { ALL_KINDS, BackendBase, defineCapabilities } from '../../backend/backend-base.js'
import {
  decideGrant,
  type HolderState,
  isValid,
  occupies,
  stateKey,
  type WaiterState,
} from '../../backend/grant-rules.js'
import {
  holderFromRow,
  inspection,
  type ListRequest,
  type LockInspection,
  type LockSummary,
  lockKeysOf,
  summariesOf,
  waitersFromRows,
} from '../../backend/inspection.js'
import { LocalNotifier } from '../../backend/local-notifier.js'
import type {
  AcquireRequest,
  AcquireResult,
  HolderRef,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from '../../backend/types.js'

interface LockState {
  holders: Map<string, HolderState>
  waiters: Map<string, WaiterState>
}

/** Grants between two sweeps of abandoned lock state. */
const SWEEP_EVERY = 10_000

const CAPABILITIES = defineCapabilities({
  fencing: 'native',
  notifications: 'global',
  kinds: ALL_KINDS,
  crossProcess: false,
  lockDelay: true,
  clock: 'process',
  waiters: 'queued',
  inspect: true,
  list: true,
})

/**
 * Locks held in this process's memory: every capability, no server. For tests, single-process apps, and
 * as the reference implementation of the grant rules. Each call runs synchronously, so it is atomic.
 */
export class MemoryBackend extends BackendBase {
  readonly name = 'memory'
  override readonly capabilities = CAPABILITIES
  private readonly locks = new Map<string, LockState>()
  /** One counter for all names: strictly increasing per name too, and it never grows with the name count. */
  private fence = 0n
  private readonly notifier = new LocalNotifier()
  private seq = 0
  private grantsSinceSweep = 0

  async tryAcquire(request: AcquireRequest): Promise<AcquireResult> {
    const key = stateKey(request)
    const now = Date.now()
    const state = this.prune(key, now)
    const decision = decideGrant(request, [...state.holders.values()], [...state.waiters.values()], now)
    if (!decision.grant) {
      if (request.queue) this.enqueue(state, request, now)
      return { acquired: false, retryAfterMs: decision.retryAfterMs, permitsInForce: decision.permitsInForce }
    }
    const token = ++this.fence
    state.waiters.delete(request.owner)
    const expiresAt = now + request.ttlMs
    state.holders.set(request.owner, {
      owner: request.owner,
      kind: request.kind,
      expiresAt,
      delayUntil: expiresAt + request.lockDelayMs,
      token,
      permits: request.kind === 'semaphore' ? request.permits : undefined,
    })
    // Sweep only after the grant is written: the sweep drops empty states, which this one was a moment ago.
    if (++this.grantsSinceSweep >= SWEEP_EVERY) this.sweep(now)
    return { acquired: true, token }
  }

  async renew(request: RenewRequest): Promise<boolean> {
    const now = Date.now()
    const state = this.locks.get(stateKey(request))
    const holder = state?.holders.get(request.owner)
    if (state === undefined || holder === undefined || !isValid(holder, now)) return false
    const expiresAt = now + request.ttlMs
    const delay = holder.delayUntil - holder.expiresAt
    state.holders.set(request.owner, { ...holder, expiresAt, delayUntil: expiresAt + delay })
    return true
  }

  async release(request: HolderRef): Promise<boolean> {
    const key = stateKey(request)
    const now = Date.now()
    const state = this.locks.get(key)
    const holder = state?.holders.get(request.owner)
    if (state === undefined || holder === undefined || !isValid(holder, now)) return false
    state.holders.delete(request.owner)
    this.dropIfEmpty(key, state)
    this.notifier.notify(key)
    return true
  }

  override async leaveQueue(request: HolderRef): Promise<void> {
    const key = stateKey(request)
    const state = this.locks.get(key)
    if (state?.waiters.delete(request.owner) === true) {
      this.dropIfEmpty(key, state)
      this.notifier.notify(key)
    }
  }

  async isLocked(ref: LockRef & { permits: number }): Promise<boolean> {
    const key = stateKey(ref)
    const state = this.prune(key, Date.now())
    const locked = ref.kind === 'semaphore' ? state.holders.size >= ref.permits : state.holders.size > 0
    this.dropIfEmpty(key, state)
    return locked
  }

  async forceRelease(ref: LockRef): Promise<boolean> {
    const key = stateKey(ref)
    const state = this.locks.get(key)
    if (state === undefined) return false
    this.locks.delete(key)
    this.notifier.notify(key, true)
    return state.holders.size > 0
  }

  /** The live holders and the fair/write waiters in line (the backend records no waiting start time). */
  override async inspect(key: string): Promise<LockInspection> {
    const now = Date.now()
    const states = [key, stateKey({ key, kind: 'semaphore' })].map((k) => this.locks.get(k))
    const holders = states.flatMap((s) => [...(s?.holders.values() ?? [])].filter((h) => occupies(h, now)))
    const waiters = states.flatMap((s) => [...(s?.waiters.values() ?? [])].filter((w) => w.expiresAt > now))
    return inspection(key, holders.map(holderFromRow), waitersFromRows(waiters))
  }

  override async list(request: ListRequest): Promise<LockSummary[]> {
    return summariesOf(lockKeysOf(this.locks.keys(), request), request.limit, (key) => this.inspect(key))
  }

  subscribe(ref: LockRef): ReleaseSubscription {
    return this.notifier.subscribe(stateKey(ref), ref.kind)
  }

  override async close(): Promise<void> {
    // Nothing was opened; the state stays for other Locks sharing this backend.
  }

  /** Drops expired holders and waiters, returning the (possibly new) state of `key`. */
  private prune(key: string, now: number): LockState {
    let state = this.locks.get(key)
    if (state === undefined) {
      state = { holders: new Map(), waiters: new Map() }
      this.locks.set(key, state)
      return state
    }
    for (const [owner, holder] of state.holders) if (!occupies(holder, now)) state.holders.delete(owner)
    for (const [owner, waiter] of state.waiters) if (waiter.expiresAt <= now) state.waiters.delete(owner)
    return state
  }

  /** Drops the state of locks whose holders all expired unreleased and were never looked at again. */
  private sweep(now: number): void {
    this.grantsSinceSweep = 0
    for (const [key, state] of this.locks) {
      this.prune(key, now)
      this.dropIfEmpty(key, state)
    }
  }

  private enqueue(state: LockState, request: AcquireRequest, now: number): void {
    const existing = state.waiters.get(request.owner)
    state.waiters.set(request.owner, {
      owner: request.owner,
      kind: request.kind,
      seq: existing?.seq ?? ++this.seq,
      expiresAt: now + request.queueTtlMs,
    })
  }

  private dropIfEmpty(key: string, state: LockState): void {
    if (state.holders.size === 0 && state.waiters.size === 0) this.locks.delete(key)
  }
}
