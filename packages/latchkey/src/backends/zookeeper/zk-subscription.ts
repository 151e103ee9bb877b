import { WakeSubscription } from '../../backend/local-notifier.js'

/**
 * A release subscription fed by the predecessor watch of the one waiter it is bound to (see
 * `ZookeeperBackend.subscribe`). `wait` returns at once when a notification arrived since the last wait.
 */
export class ZkSubscription extends WakeSubscription {
  /** The owner whose watches feed this subscription, once its first `tryAcquire` ran. */
  owner: string | undefined
  /** Notifications delivered so far (for tests and diagnostics). */
  fired = 0

  constructor(
    readonly key: string,
    onClose: (sub: ZkSubscription) => void,
  ) {
    super((sub) => onClose(sub as ZkSubscription))
  }

  /** Delivers one notification. */
  override fire(): void {
    if (this.closed) return
    this.fired++
    super.fire()
  }
}
