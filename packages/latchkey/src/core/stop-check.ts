/** Why an acquire must stop early: the caller's abort or `Locks.close()`. */
import { LocksClosedError } from '../errors.js'

/**
 * The caller's signal and `close()`, checked cheaply on every try; one linked `AbortSignal` is built only when
 * the acquire has to wait (an uncontended acquire never pays for an AbortController and its listeners).
 */
export class StopCheck {
  private link: { controller: AbortController; onUser(): void; onClose(): void } | undefined

  constructor(
    private readonly user: AbortSignal | undefined,
    private readonly closing: AbortSignal,
  ) {}

  get stopped(): boolean {
    return isStopped(this.user, this.closing)
  }

  /** Rejects with the caller's reason, or `LocksClosedError` after `close()`. */
  throwIfStopped(): void {
    throwIfStopped(this.user, this.closing)
  }

  /**
   * The signal a wait listens to: `close()`'s own when the caller gave none (no AbortController and no listener
   * to link them: a contended acquire waits at least once, and those were a good part of its own CPU), else the
   * linked one. A wait it aborts must be reported through {@link throwIfStopped}, which turns `close()`'s abort
   * into `LocksClosedError` as the linked signal's reason did.
   */
  waitSignal(): AbortSignal {
    return this.user === undefined ? this.closing : this.linked()
  }

  /** A signal that aborts like {@link throwIfStopped} would throw; created once, on the first wait. */
  linked(): AbortSignal {
    if (this.link !== undefined) return this.link.controller.signal
    const controller = new AbortController()
    const onUser = (): void => controller.abort(this.user?.reason)
    const onClose = (): void => controller.abort(closedError())
    this.link = { controller, onUser, onClose }
    if (this.user?.aborted) onUser()
    else if (this.closing.aborted) onClose()
    else {
      this.user?.addEventListener('abort', onUser, { once: true })
      this.closing.addEventListener('abort', onClose, { once: true })
    }
    return controller.signal
  }

  dispose(): void {
    if (this.link === undefined) return
    this.user?.removeEventListener('abort', this.link.onUser)
    this.closing.removeEventListener('abort', this.link.onClose)
  }
}

/** Whether the caller aborted (`user`) or `close()` was called (`closing`). */
export function isStopped(user: AbortSignal | undefined, closing: AbortSignal): boolean {
  return user?.aborted === true || closing.aborted
}

/** Throws the caller's reason, or `LocksClosedError` after `close()`; {@link StopCheck} without the object. */
export function throwIfStopped(user: AbortSignal | undefined, closing: AbortSignal): void {
  if (user?.aborted) throw user.reason
  if (closing.aborted) throw closedError()
}

function closedError(): LocksClosedError {
  return new LocksClosedError('latchkey: Locks.close() was called while acquiring')
}
