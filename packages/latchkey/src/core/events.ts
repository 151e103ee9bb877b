import type { LockKind } from '../backend/types.js'

interface EventBase {
  /** The lock name as given to `mutex(name)` etc. (without the namespace). */
  readonly name: string
  readonly kind: LockKind
  /** The backend's short name. */
  readonly backend: string
}

/**
 * What `createLocks({ onEvent })` receives. Handlers run synchronously; one that throws is reported
 * as a process warning and never breaks the lock.
 */
export type LockEvent =
  | (EventBase & {
      readonly type: 'acquired'
      readonly token: bigint
      readonly waitedMs: number
      readonly reentrant: boolean
    })
  | (EventBase & { readonly type: 'released'; readonly token: bigint; readonly heldMs: number })
  | (EventBase & { readonly type: 'renewed'; readonly token: bigint; readonly expiresAt: number })
  | (EventBase & { readonly type: 'renew-failed'; readonly token: bigint; readonly error: unknown })
  | (EventBase & { readonly type: 'lost'; readonly token: bigint; readonly error: Error })
  | (EventBase & { readonly type: 'timeout'; readonly waitedMs: number })
  | (EventBase & { readonly type: 'backend-error'; readonly error: unknown })
  | (EventBase & { readonly type: 'release-failed'; readonly token: bigint; readonly error: unknown })

/** The handler type of `onEvent`. */
export type LockEventHandler = (event: LockEvent) => void

/** Calls `handler` without letting its errors escape (they become process warnings). */
export function emitSafely(handler: LockEventHandler | undefined, event: LockEvent): void {
  if (handler === undefined) return
  try {
    handler(event)
  } catch (error) {
    process.emitWarning(`latchkey: onEvent handler threw on "${event.type}": ${String(error)}`, 'LatchkeyWarning')
  }
}
