export { ALL_KINDS, BackendBase, DEFAULT_CAPABILITIES, defineCapabilities } from './backend/backend-base.js'
export {
  decideGrant,
  type GrantDecision,
  type HolderState,
  isExclusive,
  stateKey,
  type WaiterState,
} from './backend/grant-rules.js'
export {
  type HolderInfo,
  type HolderRow,
  holderFromRow,
  inspection,
  type ListRequest,
  type LockInspection,
  type LockSummary,
  lockKeysOf,
  summariesOf,
  type WaiterInfo,
} from './backend/inspection.js'
export { LocalNotifier, WakeSubscription } from './backend/local-notifier.js'
export type {
  AcquireRequest,
  AcquireResult,
  Backend,
  BackendCapabilities,
  CallOptions,
  HolderRef,
  LockKind,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from './backend/types.js'
export { backendFromUrl } from './backend-url.js'
export type { LockEvent, LockEventHandler } from './core/events.js'
export type { Leader, LeaderOptions, LeaderRevoked, LeaderTerm } from './core/leader-types.js'
export type { Lease } from './core/lease.js'
export type { AcquireOptions, Lock } from './core/lock.js'
export { createLocks, type Locks, type LocksOptions } from './core/locks.js'
export { MultiLease } from './core/multi.js'
export type { ListOptions } from './core/operator.js'
export {
  BackendUnavailableError,
  isLockError,
  LockError,
  type LockErrorOptions,
  LockLostError,
  LocksClosedError,
  LockTimeoutError,
  type NodeOutcome,
  NotLockHolderError,
  PermitsMismatchError,
  QuorumNotReachedError,
  StaleTokenError,
  UnsupportedError,
} from './errors.js'
export { combineEventHandlers } from './observe/combine-event-handlers.js'
export { redactText, redactUrl } from './redact-url.js'
