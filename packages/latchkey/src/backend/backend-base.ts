/**
 * A base for backends (the role Kysely's `DialectAdapterBase` plays for dialects): the capability defaults and
 * the methods most backends leave empty, so a backend declares only what differs. The {@link Backend} interface
 * stays the contract; a backend written against it alone, without this base, keeps working, and one that lacks a
 * capability added after it was written is read with that capability's default.
 */
import { UnsupportedError } from '../errors.js'
import type { ListRequest, LockInspection, LockSummary } from './inspection.js'
import type {
  AcquireRequest,
  AcquireResult,
  Backend,
  BackendCapabilities,
  CallOptions,
  HolderRef,
  LockKind,
  LockRef,
  RenewRequest,
} from './types.js'

/** Every lock kind, for a backend that implements them all. */
export const ALL_KINDS: readonly LockKind[] = Object.freeze(['mutex', 'fair', 'read', 'write', 'semaphore'] as const)

/**
 * What a backend can do unless it says otherwise: the least a lock server offers. Mutexes only, no fencing
 * tokens, no release notifications (waiters poll), state shared by every process that talks to the server,
 * leases timed by the server's clock, no lock-delay.
 */
export const DEFAULT_CAPABILITIES: BackendCapabilities = Object.freeze({
  fencing: 'none',
  notifications: 'none',
  kinds: Object.freeze(['mutex'] as const),
  crossProcess: true,
  lockDelay: false,
  clock: 'server',
  waiters: 'none',
  inspect: false,
  list: false,
})

/**
 * The capabilities of a backend that declares only `overrides`, the rest from {@link DEFAULT_CAPABILITIES};
 * frozen. Also completes the capabilities of a backend written before a capability existed.
 *
 * @example
 * readonly capabilities = defineCapabilities({ fencing: 'native', kinds: ALL_KINDS })
 */
export function defineCapabilities(overrides: Partial<BackendCapabilities> = {}): BackendCapabilities {
  const kinds = overrides.kinds ?? DEFAULT_CAPABILITIES.kinds
  return Object.freeze({
    ...DEFAULT_CAPABILITIES,
    ...overrides,
    kinds: Object.isFrozen(kinds) ? kinds : Object.freeze([...kinds]),
  })
}

/**
 * Extend it to write a backend: implement the four calls that touch lock state, override `capabilities` with
 * {@link defineCapabilities} for what differs from the defaults, and override `leaveQueue` (a backend that keeps
 * waiters in line), `subscribe` (one that pushes releases), `watchLease` and `close` where they apply.
 *
 * @example
 * class MyBackend extends BackendBase {
 *   readonly name = 'my-store'
 *   override readonly capabilities = defineCapabilities({ fencing: 'native' })
 *   async tryAcquire(request: AcquireRequest) { ... }
 *   // renew, release, isLocked, forceRelease
 * }
 */
export abstract class BackendBase implements Backend {
  abstract readonly name: string
  readonly capabilities: BackendCapabilities = DEFAULT_CAPABILITIES

  abstract tryAcquire(request: AcquireRequest, options?: CallOptions): Promise<AcquireResult>
  abstract renew(request: RenewRequest): Promise<boolean>
  abstract release(request: HolderRef): Promise<boolean>
  abstract isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean>
  abstract forceRelease(ref: LockRef): Promise<boolean>

  /** Default: the backend keeps nothing for a waiter (no place in line, no waiting node), so nothing to drop. */
  async leaveQueue(_request: HolderRef): Promise<void> {}

  /** Default: not implemented (`capabilities.inspect` is false). */
  async inspect(_key: string): Promise<LockInspection> {
    throw new UnsupportedError(`The ${this.name} backend cannot inspect locks (capabilities.inspect is false)`)
  }

  /** Default: not implemented (`capabilities.list` is false). */
  async list(_request: ListRequest): Promise<LockSummary[]> {
    throw new UnsupportedError(`The ${this.name} backend cannot list locks (capabilities.list is false)`)
  }

  /** Default: the backend opened nothing of its own (its clients belong to the application). */
  async close(): Promise<void> {}
}
