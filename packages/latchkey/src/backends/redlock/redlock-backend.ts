/**
 * RedLock (the Redis docs' algorithm): one lease over N independent Redis masters. The same random value (the
 * request's owner) is set on every node in parallel; the lease exists only when a majority granted it with validity
 * left. This file wires the Backend primitives to the rounds beside it: acquire-round.ts (and split-vote.ts,
 * give-back.ts), handover.ts, waiter-line.ts, quorum-round.ts.
 */
import { BackendBase, defineCapabilities } from '../../backend/backend-base.js'
import type { ListRequest, LockInspection, LockSummary } from '../../backend/inspection.js'
import type {
  AcquireRequest,
  AcquireResult,
  BackendCapabilities,
  HolderRef,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from '../../backend/types.js'
import { UnsupportedError } from '../../errors.js'
import { attempt } from './acquire-round.js'
import { blockedFor, polled } from './contention.js'
import { handedOver, handOn } from './handover.js'
import { lineKeys } from './line-keys.js'
import { localSuccessor } from './local-successor.js'
import { majority } from './quorum-round.js'
import { RedlockContext, type RedlockSettings } from './redlock-context.js'
import { inspectRedlock, listRedlock, type RedlockInspectDeps } from './redlock-inspect.js'
import type { RedlockNode } from './redlock-node.js'
import { RedlockNotifier, type SubscriberOpener } from './redlock-notifier.js'
import { EXISTS, FORCE_DELETE, RELEASE, RENEW } from './scripts/index.js'
import { giveUpPlace, leaveLine, placeFollower } from './waiter-line.js'

/** How long an idle lock's channel stays subscribed, so that a hot lock does not re-subscribe. */
const SUBSCRIBER_LINGER_MS = 10_000

/**
 * How soon to try again when the round's view is about to change: the plurality leader keeps its keys while the
 * others give theirs back, or a node still had the key of a holder whose release was announced.
 */
const SOON_MS = 1

/** The RedLock backend; build it with `redlockBackend()`. */
export class RedlockBackend extends BackendBase {
  readonly name = 'redlock'
  // Mutex only, server clocks, and no fencing, because there is no sound token across independent masters: each
  // node could count, but a restarted node or a different majority would hand out a lower number (see README
  // "When to use RedLock"). Releases are pushed when every client can open a subscriber connection.
  override readonly capabilities: BackendCapabilities
  /**
   * Release notifications of `ref`'s lock for the waiting acquire `owner`; absent (the core polls) when a client
   * cannot open a subscriber connection.
   */
  readonly subscribe?: (ref: LockRef, owner?: string) => ReleaseSubscription
  private readonly ctx: RedlockContext

  constructor(nodes: readonly RedlockNode[], settings: RedlockSettings) {
    super()
    const openers = nodes.map((n) => n.openSubscriber)
    const all = openers.every((o) => o !== undefined)
    const notifier = all
      ? new RedlockNotifier(openers as SubscriberOpener[], SUBSCRIBER_LINGER_MS, settings.quorum)
      : undefined
    this.ctx = new RedlockContext(nodes, settings, notifier)
    this.capabilities = defineCapabilities({ notifications: all ? 'global' : 'none', inspect: true, list: true })
    // The core subscribes with the acquire request itself: its lease length lets a release hand it the lock.
    if (notifier !== undefined) {
      this.subscribe = (ref, owner) =>
        notifier.subscribe(this.ctx.channel(ref), owner ?? '', (ref as Partial<AcquireRequest>).ttlMs)
    }
  }

  /**
   * One RedLock round, never a pause: spacing the tries is the core's waiting policy, which the caller can abort.
   * A split vote (contenders each won a minority and nobody holds the lock) answers "not acquired" with a random
   * `retryAfterMs` below `retry.delayMs`, the Redis docs' advice to desynchronise the contenders; a lock held by a
   * majority answers with the time until enough of its keys expire.
   */
  async tryAcquire(request: AcquireRequest): Promise<AcquireResult> {
    this.checkKind(request)
    // This try answers the wake, if one woke it: a later release must wake someone (again).
    const notifier = this.ctx.notifier
    const sub = notifier?.subscriptionOf(request.owner)
    const sentAt = performance.now()
    // A round of its own now could undo keys that release is handing it (see handOn).
    if (sub?.handing !== undefined) await sub.handing
    if (sub !== undefined && notifier !== undefined) {
      const handed = handedOver(this.ctx, request, sub)
      if (handed !== undefined) {
        placeFollower(this.ctx, request, sub)
        return handed
      }
      const blockedMs = blockedFor(sub, sentAt)
      if (blockedMs !== undefined) return { acquired: false, retryAfterMs: blockedMs }
      sub.owesTry = false
    }
    if (sub !== undefined) sub.inRound = true
    const result = await attempt(this.ctx, request, sub).finally(() => {
      if (sub !== undefined) sub.inRound = false
    })
    if (sub !== undefined && notifier !== undefined) {
      sub.retrying = result.kind === 'soon' || result.kind === 'split'
      if (result.kind === 'acquired') polled(sub, sentAt, request.owner, sentAt + request.ttlMs)
      else if (result.kind === 'held' && result.holder !== undefined && result.retryAfterMs !== undefined) {
        polled(sub, sentAt, result.holder, sentAt + result.retryAfterMs)
      } else polled(sub, sentAt, undefined, 0)
    }
    if (result.kind === 'acquired') {
      if (sub !== undefined) placeFollower(this.ctx, request, sub)
      return { acquired: true, token: 0n }
    }
    if (result.kind === 'held') return { acquired: false, retryAfterMs: result.retryAfterMs }
    if (result.kind === 'soon') return { acquired: false, retryAfterMs: SOON_MS }
    return { acquired: false, retryAfterMs: Math.random() * this.ctx.settings.retryDelayMs }
  }

  /** Extends on a majority, comparing the owner on each node; false once a majority says it is not ours. */
  async renew(request: RenewRequest): Promise<boolean> {
    this.checkKind(request)
    const run = (node: RedlockNode) => node.run(RENEW, [this.ctx.key(request)], [request.owner, String(request.ttlMs)])
    const renewed = await majority(this.ctx, run, request.ttlMs, request.key, 'extend')
    // Lost: nothing left to pass on at home.
    if (!renewed) this.ctx.validity.delete(request.owner)
    return renewed
  }

  /**
   * Compare-and-delete on every node, or where a process waits in line, handing the key to the first waiter; true
   * when a majority had our value.
   */
  async release(request: HolderRef): Promise<boolean> {
    this.checkKind(request)
    const ctx = this.ctx
    const keys = lineKeys(ctx.key(request))
    const validity = ctx.validity.get(request.owner)
    ctx.validity.delete(request.owner)
    const next = localSuccessor(ctx.notifier?.channelOf(ctx.channel(request)))
    if (next !== undefined) return handOn(ctx, request, next, validity)
    const args = ctx.releaseArgs(request, 'h')
    return majority(ctx, (node) => node.run(RELEASE, keys, args), 0, request.key, 'release', ctx.releaseTiming())
  }

  /** A waiter that gives up leaves the line on every node and gives back whatever keys it has (see giveUpPlace). */
  override async leaveQueue(request: HolderRef): Promise<void> {
    if (!leaveLine(this.ctx, request.owner)) return
    this.checkKind(request)
    await giveUpPlace(this.ctx, request)
  }

  /** Held when a majority of nodes have the key. */
  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    this.checkKind(ref)
    return majority(this.ctx, (node) => node.run(EXISTS, [this.ctx.key(ref)], []), 0, ref.key, 'check')
  }

  /** DEL on every node; true when a majority had the key. */
  async forceRelease(ref: LockRef): Promise<boolean> {
    this.checkKind(ref)
    const keys = lineKeys(this.ctx.key(ref))
    return majority(this.ctx, (node) => node.run(FORCE_DELETE, keys, []), 0, ref.key, 'force-release')
  }

  /** The owner a quorum of nodes agrees on, with the expiry by which a quorum no longer has it. */
  override async inspect(key: string): Promise<LockInspection> {
    return inspectRedlock(this.inspectDeps(), key)
  }

  override async list(request: ListRequest): Promise<LockSummary[]> {
    return listRedlock(this.inspectDeps(), request)
  }

  private inspectDeps(): RedlockInspectDeps {
    const { quorum, keyPrefix } = this.ctx.settings
    return { nodes: this.ctx.nodes, quorum, keyPrefix, timing: this.ctx.timing(0) }
  }

  /** Closes the subscriber connections the backend opened; the clients belong to the application. */
  override async close(): Promise<void> {
    await this.ctx.notifier?.close()
  }

  private checkKind(ref: LockRef): void {
    if (ref.kind !== 'mutex') {
      throw new UnsupportedError(
        `The redlock backend implements only mutexes, not ${ref.kind} locks: a quorum of independent counters does not bound a semaphore, and fair queues have no single order`,
        { lockName: ref.key },
      )
    }
  }
}
