/**
 * RedLock (the Redis docs' algorithm): one lease over N independent Redis masters. The same random value (the
 * request's owner) is set on every node in parallel; the lease exists only when a majority granted it with validity
 * left.
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
import { QuorumNotReachedError, UnsupportedError } from '../../errors.js'
import { type FanOutTiming, fanOut, tally, type Vote } from './fan-out.js'
import { lineKeys } from './line-keys.js'
import { inspectRedlock, listRedlock, type RedlockInspectDeps } from './redlock-inspect.js'
import type { RedlockNode } from './redlock-node.js'
import { RedlockNotifier, type SubscriberOpener } from './redlock-notifier.js'
import type { RedlockSubscription } from './redlock-subscription.js'
import { ACQUIRE, EXISTS, FORCE_DELETE, PLACE, RELEASE, RENEW } from './scripts/index.js'
import { type Attempt, granted, heldOrSplit, outcome, plurality } from './votes.js'

/** Resolved settings of a {@link RedlockBackend}. */
export interface RedlockSettings {
  readonly quorum: number
  readonly driftFactor: number
  /** Fixed per-node timeout, or undefined for the TTL-based default ({@link defaultNodeTimeoutMs}). */
  readonly nodeTimeoutMs: number | undefined
  readonly retryDelayMs: number
  readonly keyPrefix: string
}

/**
 * The default per-node timeout: 0.5 % of the lease, between 50 and 200 ms (50 ms for a 10 s lease, the upper end
 * of the 5-50 ms the Redis docs give for one). The floor is for scheduling, not the network: on a busy
 * host a healthy redis-server (or this event loop) is sometimes descheduled for tens of ms, and a node wrongly
 * timed out costs a whole attempt. A node known to be down is not waited for at all, and a paused one only
 * delays a round that has no majority without it.
 */
export function defaultNodeTimeoutMs(ttlMs: number): number {
  return Math.min(200, Math.max(50, Math.round(ttlMs * 0.005)))
}

/** The shortest per-node deadline of a release when `nodeTimeoutMs` is not set (see RedlockBackend.releaseTiming). */
const RELEASE_NODE_TIMEOUT_MS = 1_000

/** A node never heard from yet (its client may still be connecting) gets this long. */
const FIRST_CONTACT_MS = 1_000

const isOne = (v: unknown) => Number(v) === 1

/** How long an idle lock's channel stays subscribed, so that a hot lock does not re-subscribe. */
const SUBSCRIBER_LINGER_MS = 10_000

/**
 * How soon to try again when the round's view is about to change: the plurality leader keeps its keys while the
 * others give theirs back, or a node still had the key of a holder whose release was announced.
 */
const SOON_MS = 1

/** Rounds in a row a plurality leader keeps its keys; then it gives them back like everyone (views may differ). */
const MAX_LEADS = 3

/**
 * How long a waiting head's place in line lasts on a node unless one of its rounds renews it. Its rounds come at
 * least every 2 s (the core's fallback pause), so this outlives them; it bounds what a waiter that died in line costs:
 * a release within this time hands the lock to it, and the lock then waits for that lease to expire.
 */
const LINE_TTL_MS = 5_000

/** How a failed round's keys are given back: `undo` keeps our place in line and wakes nobody; `release` hands on. */
type GiveBack = 'undo' | 'release'

/** The RedLock backend; build it with `redlockBackend()`. */
export class RedlockBackend extends BackendBase {
  readonly name = 'redlock'
  // Mutex only, server clocks, and no fencing, because there is no sound token across independent masters: each
  // node could count, but a restarted node or a different majority would hand out a lower number (see README
  // "When to use RedLock"). Releases are pushed when every client can open a subscriber connection.
  override readonly capabilities: BackendCapabilities
  /** Undefined when a client cannot duplicate itself: waiters then poll. */
  private readonly notifier: RedlockNotifier | undefined
  /**
   * Release notifications of `ref`'s lock for the waiting acquire `owner`; absent (the core polls) when a client
   * cannot open a subscriber connection.
   */
  readonly subscribe?: (ref: LockRef, owner?: string) => ReleaseSubscription
  /** Waiting owners that kept their keys as a split round's plurality leader, with how many rounds in a row. */
  private readonly leads = new Map<string, number>()
  /** Waiting owners that took a place in line on the nodes (and have not got the lock): leaveQueue clears it. */
  private readonly inLine = new Set<string>()
  /**
   * Holders of this process, with the time from which a quorum of nodes is known to keep their keys (or the keys
   * of the holder before them, which a release here is renaming to them on the same connections) for `ttlMs`: a
   * release at home passes what is left of it on (see handOn).
   */
  private readonly validity = new Map<string, { readonly from: number; readonly ttlMs: number }>()

  constructor(
    private readonly nodes: readonly RedlockNode[],
    private readonly settings: RedlockSettings,
  ) {
    super()
    const openers = nodes.map((n) => n.openSubscriber)
    const all = openers.every((o) => o !== undefined)
    this.notifier = all
      ? new RedlockNotifier(openers as SubscriberOpener[], SUBSCRIBER_LINGER_MS, settings.quorum)
      : undefined
    this.capabilities = defineCapabilities({ notifications: all ? 'global' : 'none', inspect: true, list: true })
    const notifier = this.notifier
    // The core subscribes with the acquire request itself: its lease length lets a release hand it the lock.
    if (notifier !== undefined) {
      this.subscribe = (ref, owner) =>
        notifier.subscribe(this.channel(ref), owner ?? '', (ref as Partial<AcquireRequest>).ttlMs)
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
    const notifier = this.notifier
    const sub = notifier?.subscriptionOf(request.owner)
    const sentAt = performance.now()
    // A round of its own now could undo keys that release is handing it (see handOn).
    if (sub?.handing !== undefined) await sub.handing
    if (sub !== undefined && notifier !== undefined) {
      const handedOver = this.handedOver(request, sub)
      if (handedOver !== undefined) {
        this.placeFollower(request, sub)
        return handedOver
      }
      const blockedMs = notifier.blockedFor(sub, sentAt)
      if (blockedMs !== undefined) return { acquired: false, retryAfterMs: blockedMs }
      sub.owesTry = false
    }
    if (sub !== undefined) sub.inRound = true
    const result = await this.attempt(request, sub).finally(() => {
      if (sub !== undefined) sub.inRound = false
    })
    if (sub !== undefined && notifier !== undefined) {
      sub.retrying = result.kind === 'soon' || result.kind === 'split'
      if (result.kind === 'acquired') notifier.polled(sub, sentAt, request.owner, sentAt + request.ttlMs)
      else if (result.kind === 'held' && result.holder !== undefined && result.retryAfterMs !== undefined) {
        notifier.polled(sub, sentAt, result.holder, sentAt + result.retryAfterMs)
      } else notifier.polled(sub, sentAt, undefined, 0)
    }
    if (result.kind === 'acquired') {
      if (sub !== undefined) this.placeFollower(request, sub)
      return { acquired: true, token: 0n }
    }
    if (result.kind === 'held') return { acquired: false, retryAfterMs: result.retryAfterMs }
    if (result.kind === 'soon') return { acquired: false, retryAfterMs: SOON_MS }
    return { acquired: false, retryAfterMs: Math.random() * this.settings.retryDelayMs }
  }

  /**
   * The lease a quorum of nodes handed this waiter on releases (scripts/release.lua), taken without a round. Each
   * node set its key after one of this waiter's rounds put it in line there, or a later round refreshed it, so a
   * quorum of those keys expires no earlier than `sub.handedSince(quorum) + ttl` (see RedlockSubscription.answeredAt):
   * the lease is timed from there, and taken only while RedLock's validity (ttl - elapsed - drift) is left of it.
   */
  private handedOver(request: AcquireRequest, sub: RedlockSubscription): AcquireResult | undefined {
    // Passed on at home with the validity of the holder before it (see handOn), or handed over by a release of this
    // process on a quorum (sent before any node set the key), or by releases of the line.
    const triedAt = sub.inherited ?? sub.handedAt ?? sub.handedSince(this.settings.quorum)
    if (triedAt === undefined) return undefined
    const drift = request.ttlMs * this.settings.driftFactor + 2
    // Past its validity, a round (which refreshes the keys it has) settles it.
    if (request.ttlMs - (performance.now() - triedAt) - drift <= 0) return undefined
    if (sub.inherited !== undefined) sub.tookInherited = true
    sub.owesTry = false
    this.leads.delete(request.owner)
    this.inLine.delete(request.owner)
    this.validity.set(request.owner, { from: triedAt, ttlMs: request.ttlMs })
    return { acquired: true, token: 0n, grantedAt: triedAt }
  }

  /**
   * `sub` got the lock: the waiter behind it in this process takes its place in line now, in the background, while
   * the lock is held here (a round of its own would keep the next release from handing it the lock at home while
   * that round is out, see localSuccessor). Only its place: the script never takes the lock. A release handing it
   * the lock later, on any node, comes after this was sent, which times that lease (RedlockSubscription.answeredAt).
   */
  private placeFollower(request: AcquireRequest, sub: RedlockSubscription): void {
    const follower = this.notifier?.follower(sub)
    if (follower === undefined || follower.ttlMs === undefined) return
    const sentAt = performance.now()
    follower.ticket = Date.now()
    follower.firstTriedAt ??= sentAt
    follower.placedAt = sentAt
    this.inLine.add(follower.owner)
    const args = [follower.owner, String(follower.ttlMs), String(follower.ticket), String(LINE_TTL_MS)]
    const keys = lineKeys(this.key(request))
    void fanOut(this.nodes, (node) => node.run(PLACE, keys, args), this.timing(follower.ttlMs)).then((votes) => {
      votes.forEach((v, i) => {
        if (v.state === 'ok') follower.answeredAt.set(i, sentAt)
      })
    })
  }

  /**
   * One RedLock round (timestamp, SET on every node, majority with validity left, else undo). Why the core's lease
   * deadline stays safe although RedLock's validity (ttl - elapsed - drift) is shorter than the TTL: the core starts
   * its clock when it *sends* tryAcquire, before `start` here, and every node starts its key's PX expiry when the SET
   * *arrives*, after that. So the core's deadline, send + ttl - (1 % + 2 ms), is never later than start + ttl -
   * drift, the end of RedLock's validity measured from step 1, and no node's key can expire (on a clock drifting less
   * than the margin) before it. The validity check below only refuses a lease that is already (nearly) over when the
   * majority answers.
   */
  private async attempt(request: AcquireRequest, sub: RedlockSubscription | undefined): Promise<Attempt> {
    const { quorum } = this.settings
    const waiting = sub !== undefined
    const key = this.key(request)
    const keys = lineKeys(key)
    // A waiting head takes (or keeps) its place in line on every node, so that a release hands it the lock.
    const args = [request.owner, String(request.ttlMs)]
    if (sub !== undefined) {
      sub.ticket ??= Date.now()
      args.push(String(sub.ticket), String(LINE_TTL_MS))
      this.inLine.add(request.owner)
    }
    const start = performance.now()
    if (sub !== undefined) sub.firstTriedAt ??= start
    const votes = await fanOut(
      this.nodes,
      (node) => node.run(ACQUIRE, keys, args),
      this.timing(request.ttlMs),
      // Stop at a majority for; a failed round waits for every node (at most one node timeout), so it knows
      // exactly which nodes granted and undoes only those and the silent ones, not every node still in flight.
      (v) => tally(v, granted).yes >= quorum,
    )
    const elapsed = performance.now() - start
    if (sub !== undefined) {
      votes.forEach((v, i) => {
        if (v.state === 'ok') sub.answeredAt.set(i, start)
      })
    }
    const t = tally(votes, granted)
    if (t.yes >= quorum) {
      const drift = request.ttlMs * this.settings.driftFactor + 2
      if (request.ttlMs - elapsed - drift > 0) {
        this.leads.delete(request.owner)
        this.inLine.delete(request.owner)
        // Every node that granted set (or refreshed) its key after `start`.
        this.validity.set(request.owner, { from: start, ttlMs: request.ttlMs })
        return { kind: 'acquired' }
      }
      // A majority held it, if only for a moment: release it like any other lease.
      await this.undo(request, votes, 'release')
      throw this.quorumError(
        `RedLock got "${request.key}" on ${t.yes} of ${this.nodes.length} nodes, but only after ${Math.round(elapsed)} ms of a ${request.ttlMs} ms lease: no validity left. Raise ttlMs or lower nodeTimeoutMs`,
        votes,
        granted,
        request.key,
      )
    }
    if (t.answered >= quorum) return this.lost(request, votes, waiting)
    await this.undo(request, votes, 'undo')
    throw this.quorumError(
      `RedLock could not reach a quorum for "${request.key}": ${quorum} of ${this.nodes.length} nodes needed, only ${t.answered} answered`,
      votes,
      granted,
      request.key,
    )
  }

  /**
   * A round a majority answered without granting. A holder whose release was announced but whose key a node still
   * had (the release is on its way there) is counted as gone, and the round is retried at once. Among the
   * remaining contenders, every one of which sees the same votes, the one with most nodes (ties to the smallest
   * owner id: the plurality leader) keeps its keys and tries again at once while the others give theirs back and
   * stand back for it as for a holder: a split vote then costs one more round instead of everyone backing off.
   * Only a waiting acquire leads, since only its end is reported to the backend (leaveQueue gives the keys back),
   * and only {@link MAX_LEADS} rounds in a row, in case two contenders' views differ (a node timed out for one).
   */
  private async lost(request: AcquireRequest, votes: readonly Vote[], waiting: boolean): Promise<Attempt> {
    const channel = this.channel(request)
    const notifier = this.notifier
    const now = performance.now()
    const stale = (holder: string) => notifier?.isGone(channel, holder, now) === true
    const view = plurality(votes, request.owner, stale)
    if (waiting && view.leader === request.owner) {
      const leads = (this.leads.get(request.owner) ?? 0) + 1
      if (leads <= MAX_LEADS) {
        this.leads.set(request.owner, leads)
        return { kind: 'soon' }
      }
    }
    // A leader that stops leading announces it, so that the contenders that stood back for it try again.
    const wasLeading = this.leads.delete(request.owner)
    await this.undo(request, votes, wasLeading ? 'release' : 'undo')
    const result = heldOrSplit(votes, this.settings.quorum)
    // A majority still naming a holder whose release was announced: the release has not reached those nodes yet.
    if (result.kind === 'held') return result.holder !== undefined && stale(result.holder) ? { kind: 'soon' } : result
    if (waiting && view.leader !== undefined && view.leader !== request.owner) {
      // Stand back for the leader like for a holder: the release of its lease (or its giving up) is announced,
      // and this waiter's process is woken then. Retrying on a timer instead makes every split a herd.
      const sub = notifier?.subscriptionOf(request.owner)
      if (sub !== undefined) notifier?.standBack(sub, view.leader, now)
      return { kind: 'held', retryAfterMs: request.ttlMs, holder: view.leader }
    }
    return view.stale ? { kind: 'soon' } : result
  }

  /**
   * After a failed round: compare-and-delete on every node that may hold our value, i.e. all but those that
   * answered "held by another" (there it would be a no-op). Nodes that timed out are included on purpose: the SET
   * may have run and only its reply been lost. Best effort: a node that fails this too keeps our key until its
   * PX expiry, which blocks nobody unless a majority is left that way (then at most one TTL).
   *
   * `undo` keeps our place in line and is announced only as "~owner" (nobody waits for a minority given back, but
   * a key a release handed us may be among those deleted: until that message comes, the node does not count
   * among the grants, see RedlockSubscription.undone). `release` is a release like any other: it hands on.
   */
  private async undo(request: AcquireRequest, votes: readonly Vote[], how: GiveBack): Promise<void> {
    const indexes = this.nodes.flatMap((_, i) => {
      const v = votes[i]
      return v?.state === 'ok' && !granted(v.value) ? [] : [i]
    })
    const targets = indexes.map((i) => this.nodes[i] as RedlockNode)
    const args = this.releaseArgs(request, how === 'undo' ? 'u' : 'h')
    const keys = lineKeys(this.key(request))
    const results = await fanOut(targets, (node) => node.run(RELEASE, keys, args), this.timing(request.ttlMs))
    const sub = how === 'undo' ? this.notifier?.subscriptionOf(request.owner) : undefined
    if (sub === undefined) return
    results.forEach((r, j) => {
      const node = indexes[j]
      // Deleted, or perhaps deleted (no answer): not a grant until its message says so.
      if (node !== undefined && !(r.state === 'ok' && Number(r.value) === 0)) sub.undoneOn(node, 1)
    })
  }

  /** ARGV of RELEASE: owner, the channel when releases are pushed, and the mode ('h' hand on, 'u' undo). */
  private releaseArgs(ref: HolderRef, mode: 'h' | 'u'): string[] {
    return this.notifier === undefined ? [ref.owner] : [ref.owner, this.channel(ref), mode]
  }

  /** Extends on a majority, comparing the owner on each node; false once a majority says it is not ours. */
  async renew(request: RenewRequest): Promise<boolean> {
    this.checkKind(request)
    const run = (node: RedlockNode) => node.run(RENEW, [this.key(request)], [request.owner, String(request.ttlMs)])
    const renewed = await this.majority(run, request.ttlMs, request.key, 'extend')
    // Lost: nothing left to pass on at home.
    if (!renewed) this.validity.delete(request.owner)
    return renewed
  }

  /**
   * Compare-and-delete on every node, or where a process waits in line, handing the key to the first waiter; true
   * when a majority had our value.
   */
  async release(request: HolderRef): Promise<boolean> {
    this.checkKind(request)
    const keys = lineKeys(this.key(request))
    const validity = this.validity.get(request.owner)
    this.validity.delete(request.owner)
    const next = this.notifier?.localSuccessor(this.channel(request))
    if (next !== undefined) return this.handOn(request, next, validity)
    const args = this.releaseArgs(request, 'h')
    return this.majority((node) => node.run(RELEASE, keys, args), 0, request.key, 'release', this.releaseTiming())
  }

  /**
   * A release that hands the lock to `next`, a waiter of this process, in the same round: each node that still has
   * our key sets it to `next` for its lease. With a quorum of them and validity left, `next` holds the lock from
   * when this round was sent (every node set its key after that); otherwise `next` gives back what it got (to the
   * line) and waits on. The releaser's answer is a release's: true when a majority had our value.
   */
  private async handOn(
    request: HolderRef,
    next: RedlockSubscription,
    validity: { readonly from: number; readonly ttlMs: number } | undefined,
  ): Promise<boolean> {
    const ttlMs = next.ttlMs ?? 0
    const keys = lineKeys(this.key(request))
    const args = [request.owner, this.channel(request), 't', next.owner, String(ttlMs)]
    // The same round places the waiter behind `next` in line, with the lease `next` has (the waiters of one process
    // share the lock's options in practice; a different lease only changes what a later release of the line hands
    // it, and its own rounds correct its entry): it will be the head while `next` holds the lock.
    const follower = this.notifier?.follower(next)
    const sentAt = performance.now()
    if (follower !== undefined) {
      follower.ticket = Date.now()
      follower.firstTriedAt ??= sentAt
      follower.placedAt = sentAt
      this.inLine.add(follower.owner)
      args.push(follower.owner, String(follower.ticket), String(LINE_TTL_MS))
    }
    // The lock passes at once, within the validity this process holds it for: `next` takes the lease timed from
    // where ours is (the same lease length, and at least half of it left, so that the core does not renew at once),
    // while the round renames the keys to it behind. On each node the rename runs after every command sent to it
    // before (one connection), and before any `next` sends once it holds the lock (its renewal, its release), so
    // those find its name wherever ours was. As safe as our holding on for as long: the keys that name us or it
    // expire no earlier than validity.from + ttl on a quorum, and the lease of `next` ends before that (less drift).
    if (validity !== undefined && validity.ttlMs === ttlMs && performance.now() - validity.from < ttlMs / 2) {
      next.inherited = validity.from
      // In line, so that giving up gives the keys back (leaveQueue).
      this.inLine.add(next.owner)
      next.fire()
      return this.passOn(request, next, keys, args, sentAt)
    }
    let settled = () => {}
    next.handing = new Promise((resolve) => {
      settled = resolve
    })
    try {
      return await this.handOnRound(request, next, keys, args, ttlMs, sentAt, follower)
    } finally {
      next.handing = undefined
      settled()
    }
  }

  /**
   * The rename behind a lock passed on at home (see handOn). If `next` did not take the lease meanwhile (it gave up),
   * its keys are given back like a release of its own. The releaser's answer is a release's: true when a majority
   * had our value, false when a majority did not (then the lease `next` took is no better than ours was: its renewal
   * or release finds out, as ours would have).
   */
  private async passOn(
    request: HolderRef,
    next: RedlockSubscription,
    keys: string[],
    args: string[],
    sentAt: number,
  ): Promise<boolean> {
    const { quorum } = this.settings
    const n = this.nodes.length
    const votes = await fanOut(
      this.nodes,
      (node) => node.run(RELEASE, keys, args),
      this.releaseTiming(),
      (v) => {
        const t = tally(v, isOne)
        return t.yes >= quorum || t.no > n - quorum
      },
    )
    const t = tally(votes, isOne)
    const held = this.validity.get(next.owner)
    if (next.closed && !next.tookInherited && held === undefined) {
      // It left without the lock (its leaveQueue gives the keys back too: it is in line). Still waiting, it takes the
      // lease when it runs, or, past the validity, its round finds the keys already its own.
      const back = this.releaseArgs({ ...request, owner: next.owner }, 'h')
      await fanOut(this.nodes, (node) => node.run(RELEASE, keys, back), this.releaseTiming())
    } else if (next.tookInherited && held !== undefined && t.yes >= quorum) {
      // Renamed on a quorum: its keys are known to live from this round on.
      this.validity.set(next.owner, { from: Math.max(held.from, sentAt), ttlMs: held.ttlMs })
    }
    if (t.yes >= quorum) return true
    if (t.no > n - quorum) return false
    throw this.quorumError(
      `RedLock could not release "${request.key}" on a quorum: ${quorum} of ${n} nodes needed, ${t.yes} said yes, ${t.no} no, ${n - t.answered} did not answer`,
      votes,
      isOne,
      request.key,
    )
  }

  private async handOnRound(
    request: HolderRef,
    next: RedlockSubscription,
    keys: string[],
    args: string[],
    ttlMs: number,
    sentAt: number,
    follower: RedlockSubscription | undefined,
  ): Promise<boolean> {
    const { quorum } = this.settings
    const n = this.nodes.length
    const votes = await fanOut(
      this.nodes,
      (node) => node.run(RELEASE, keys, args),
      this.releaseTiming(),
      (v) => {
        const t = tally(v, isOne)
        return t.yes >= quorum || t.no > n - quorum
      },
    )
    // Every node that answered placed the follower in line (whatever it answered): a key a later release hands it
    // there is set after this round was sent.
    if (follower !== undefined) {
      votes.forEach((v, i) => {
        if (v.state === 'ok') follower.answeredAt.set(i, sentAt)
      })
    }
    const t = tally(votes, isOne)
    const drift = ttlMs * this.settings.driftFactor + 2
    if (t.yes >= quorum && ttlMs - (performance.now() - sentAt) - drift > 0 && !next.closed) {
      this.notifier?.handOver(next, sentAt)
      return true
    }
    // Not handed over: `next` gives back the keys it may have got, as a release (to the line, announced).
    const back = this.releaseArgs({ ...request, owner: next.owner }, 'h')
    const targets = this.nodes.filter(
      (_, i) => !(votes[i]?.state === 'ok' && !isOne((votes[i] as { value: unknown }).value)),
    )
    await fanOut(targets, (node) => node.run(RELEASE, keys, back), this.timing(ttlMs))
    if (t.yes >= quorum) return true
    if (t.no > n - quorum) return false
    throw this.quorumError(
      `RedLock could not release "${request.key}" on a quorum: ${quorum} of ${n} nodes needed, ${t.yes} said yes, ${t.no} no, ${n - t.answered} did not answer`,
      votes,
      isOne,
      request.key,
    )
  }

  /**
   * A waiter that gives up leaves the line on every node, and gives back (handing on) whatever keys it has: those of
   * a split round it led (see {@link lost}), or those a release handed it that it will not take.
   */
  override async leaveQueue(request: HolderRef): Promise<void> {
    const leading = this.leads.delete(request.owner)
    if (!this.inLine.delete(request.owner) && !leading) return
    this.checkKind(request)
    // Announced: the contenders that stood back for this leader (see lost) try again.
    const args = this.releaseArgs(request, 'h')
    const keys = lineKeys(this.key(request))
    await fanOut(this.nodes, (node) => node.run(RELEASE, keys, args), this.timing(0))
  }

  /** Held when a majority of nodes have the key. */
  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    this.checkKind(ref)
    return this.majority((node) => node.run(EXISTS, [this.key(ref)], []), 0, ref.key, 'check')
  }

  /** DEL on every node; true when a majority had the key. */
  async forceRelease(ref: LockRef): Promise<boolean> {
    this.checkKind(ref)
    return this.majority((node) => node.run(FORCE_DELETE, lineKeys(this.key(ref)), []), 0, ref.key, 'force-release')
  }

  /** The owner a quorum of nodes agrees on, with the expiry by which a quorum no longer has it. */
  override async inspect(key: string): Promise<LockInspection> {
    return inspectRedlock(this.inspectDeps(), key)
  }

  override async list(request: ListRequest): Promise<LockSummary[]> {
    return listRedlock(this.inspectDeps(), request)
  }

  private inspectDeps(): RedlockInspectDeps {
    const { quorum, keyPrefix } = this.settings
    return { nodes: this.nodes, quorum, keyPrefix, timing: this.timing(0) }
  }

  /** Closes the subscriber connections the backend opened; the clients belong to the application. */
  override async close(): Promise<void> {
    await this.notifier?.close()
  }

  /** Yes from a majority: true; no from more than N - quorum: false; otherwise nobody knows: QuorumNotReachedError. */
  private async majority(
    run: (node: RedlockNode) => Promise<unknown>,
    ttlMs: number,
    name: string,
    what: string,
    timing = this.timing(ttlMs),
  ): Promise<boolean> {
    const { quorum } = this.settings
    const n = this.nodes.length
    const settled = (v: readonly (Vote | undefined)[]) => {
      const t = tally(v, isOne)
      return t.yes >= quorum || t.no > n - quorum
    }
    const votes = await fanOut(this.nodes, run, timing, settled)
    const t = tally(votes, isOne)
    if (t.yes >= quorum) return true
    if (t.no > n - quorum) return false
    throw this.quorumError(
      `RedLock could not ${what} "${name}" on a quorum: ${quorum} of ${n} nodes needed, ${t.yes} said yes, ${t.no} no, ${n - t.answered} did not answer`,
      votes,
      isOne,
      name,
    )
  }

  private timing(ttlMs: number): FanOutTiming {
    // Calls without a lease (release, isLocked) use the timeout of the default 30 s lease.
    const timeoutMs = this.settings.nodeTimeoutMs ?? defaultNodeTimeoutMs(ttlMs > 0 ? ttlMs : 30_000)
    return { timeoutMs, firstContactMs: FIRST_CONTACT_MS }
  }

  /**
   * A release's per-node deadline: at least {@link RELEASE_NODE_TIMEOUT_MS} unless `nodeTimeoutMs` was set. It resolves
   * at a quorum of answers like any round, so a paused node costs nothing while a majority answers; the deadline
   * matters only when fewer do, and then the longer wait is the better bet: a release that gives up fails the caller
   * and leaves its keys to expire (the lock blocked up to a lease), where a node a loaded host did not schedule for
   * 50 ms (seen on the 2-core bench host) answers a moment later.
   */
  private releaseTiming(): FanOutTiming {
    const t = this.timing(0)
    if (this.settings.nodeTimeoutMs !== undefined) return t
    return { ...t, timeoutMs: Math.max(t.timeoutMs, RELEASE_NODE_TIMEOUT_MS) }
  }

  private key(ref: LockRef): string {
    return this.settings.keyPrefix + ref.key
  }

  /** The channel on which every node announces the lock's releases (a channel, not a key: no slot, no TTL). */
  private channel(ref: LockRef): string {
    return `${this.settings.keyPrefix}${ref.key}:released`
  }

  private checkKind(ref: LockRef): void {
    if (ref.kind !== 'mutex') {
      throw new UnsupportedError(
        `The redlock backend implements only mutexes, not ${ref.kind} locks: a quorum of independent counters does not bound a semaphore, and fair queues have no single order`,
        { lockName: ref.key },
      )
    }
  }

  private quorumError(
    message: string,
    votes: readonly Vote[],
    yes: (v: unknown) => boolean,
    name: string,
  ): QuorumNotReachedError {
    const nodes = votes.map((v, i) => outcome(this.nodes[i]?.label ?? `node ${i}`, v, yes))
    const detail = nodes.map((o) => `${o.node} ${o.outcome}`).join(', ')
    const cause = nodes.find((o) => o.error !== undefined)?.error
    return new QuorumNotReachedError(`${message} (${detail})`, nodes, { lockName: name, cause })
  }
}
