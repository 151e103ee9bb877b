import type { AcquireResult, LockKind, ReleaseSubscription } from '../../backend/types.js'
import { WakeableSubscription } from '../../backend/wakeable-subscription.js'

/** A grant a release made to a waiter, taken from its subscription: the token as told, and the try's answer. */
export interface TakenGrant {
  readonly token: string
  readonly result: AcquireResult & { acquired: true }
}

/** The local waiters of one channel (one lock family) and the state of its Redis subscription. */
export class ChannelGroup {
  /** Open subscriptions, oldest first. */
  readonly subs = new Set<RedisReleaseSubscription>()
  /** Subscriptions blocked in `wait()`, in the order they started waiting (round-robin wake order). */
  readonly waiting: RedisReleaseSubscription[] = []
  /** Set once the first waiter of the channel failed a try (lazy SUBSCRIBE); settles when acknowledged. */
  ready: Promise<void> | undefined
  subscribed = false
  /** When the last subscription closed (the channel is unsubscribed after lingering idle). */
  idleSince: number | undefined

  constructor(readonly channel: string) {}
}

/**
 * A waiter's view of release messages. The notifier wakes one such subscription per message (see
 * release-notifier.ts), so a release costs one retry per process instead of one per waiter.
 */
export class RedisReleaseSubscription extends WakeableSubscription implements ReleaseSubscription {
  /** Woken and not yet retried: if it closes now, the wake is passed on to another waiter. */
  owesTry = false
  /** The holder field of the acquire attempt this subscription serves, once linked by `tryAcquire`. */
  field: string | undefined
  /** The fencing token of a grant a release made to this waiter, until its next `tryAcquire` takes it. */
  granted: string | undefined
  /** When this waiter's last try was sent (monotonic ms): a grant made after it is timed from here. */
  triedAt = 0
  /** Its poll timer does not by itself keep the process alive. */
  protected override readonly unrefTimer = true

  /** The channel's local waiters, once this subscription joined them (see ReleaseNotifier.subscribe). */
  group: ChannelGroup | undefined

  constructor(
    readonly channel: string,
    readonly kind: LockKind,
    private readonly detach: (sub: RedisReleaseSubscription) => void,
    /** A grant is the lease as it stands (no replicas to wait for): the core may take it without a try. */
    private readonly grantsComplete: boolean,
  ) {
    super()
  }

  /**
   * The grant a release made to this waiter (`g <field> <token>`), for the core to take without a try; undefined
   * when there is none, or when the grant must wait for replicas (the try then takes it: `RedisBackend.takeHandoff`).
   */
  takeGrant(): AcquireResult | undefined {
    return this.grantsComplete ? this.takeGranted()?.result : undefined
  }

  /**
   * Takes the grant a release made to this waiter, with its token as told: the lease is timed from this waiter's last
   * try, which was sent before the release ran.
   */
  takeGranted(): TakenGrant | undefined {
    const token = this.granted
    if (token === undefined) return undefined
    this.granted = undefined
    this.owesTry = false
    return { token, result: { acquired: true, token: BigInt(token), grantedAt: this.triedAt } }
  }

  get isWaiting(): boolean {
    return this.wake !== undefined
  }

  fire(): void {
    this.owesTry = true
    if (this.wake !== undefined) this.wake()
    else this.pending = true
  }

  /** Joins the channel's round-robin of blocked waiters. */
  protected override onWaitStart(): void {
    this.group?.waiting.push(this)
  }

  protected override onWaitEnd(): void {
    const waiting = this.group?.waiting
    const at = waiting?.indexOf(this) ?? -1
    if (at !== -1) waiting?.splice(at, 1)
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.stopListening()
    this.wake?.()
    this.detach(this)
  }
}
