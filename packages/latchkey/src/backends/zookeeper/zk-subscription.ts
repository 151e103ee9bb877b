import type { ReleaseSubscription } from '../../backend/types.js'

/**
 * A release subscription fed by the predecessor watch of the one waiter it is bound to (see
 * `ZookeeperBackend.subscribe`). `wait` returns at once when a notification arrived since the last wait.
 */
export class ZkSubscription implements ReleaseSubscription {
  /** The owner whose watches feed this subscription, once its first `tryAcquire` ran. */
  owner: string | undefined
  /** Notifications delivered so far (for tests and diagnostics). */
  fired = 0
  private pending = false
  private wake: (() => void) | undefined
  private closed = false

  constructor(
    readonly key: string,
    private readonly onClose: (sub: ZkSubscription) => void,
  ) {}

  /** Delivers one notification. */
  fire(): void {
    if (this.closed) return
    this.fired++
    this.pending = true
    this.wake?.()
  }

  wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (this.pending || this.closed) {
      this.pending = false
      return Promise.resolve()
    }
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this.wake = undefined
        this.pending = false
      }
      const onAbort = (): void => {
        done()
        reject(signal?.reason)
      }
      const timer = setTimeout(() => {
        done()
        resolve()
      }, timeoutMs)
      timer.unref()
      this.wake = () => {
        done()
        resolve()
      }
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.wake?.()
    this.onClose(this)
  }
}
