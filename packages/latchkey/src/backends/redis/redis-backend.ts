import { ALL_KINDS, BackendBase, defineCapabilities } from '../../backend/backend-base.js'
import type { ListRequest, LockInspection, LockSummary } from '../../backend/inspection.js'
import type {
  AcquireRequest,
  AcquireResult,
  HolderRef,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from '../../backend/types.js'
import { grantResult } from './acquire-replies.js'
import { adaptClient, type RedisCommander } from './client-adapter.js'
import { CommandDeadlines } from './command-deadlines.js'
import { KeyCache, type KeyLayout, type LockKeys, layoutNamed } from './key-layout.js'
import { type GrantReturnDeps, lateReply, releaseGrant } from './late-replies.js'
import { inspectLock, listLocks, type OperatorReadDeps } from './operator-reads.js'
import { RecentContention } from './recent-contention.js'
import type { RedisBackendOptions } from './redis-backend-options.js'
import { ReleaseNotifier } from './release-notifier.js'
import { answer, passed, released } from './release-replies.js'
import type { RedisReleaseSubscription, TakenGrant } from './release-subscription.js'
import { type ReplicaWait, waitForReplicas } from './replica-wait.js'
import { ScriptCalls } from './script-calls.js'
import { type AcquireReply, DEFAULT_FENCE_IDLE_MS, type RedisScripts, scriptsFor } from './scripts/index.js'

/** How a try stands with its wait: queued (`q`), not waiting (`-`), first (`f`) or later (`w`) try of a watcher. */
type TryMode = 'q' | '-' | 'f' | 'w'

/** How long a waiting process stays registered as a watcher of a lock after its last try. */
export const WATCH_TTL_MS = 5_000

const CAPABILITIES = defineCapabilities({
  fencing: 'native',
  notifications: 'global',
  kinds: ALL_KINDS,
  lockDelay: true,
  waiters: 'all',
  inspect: true,
  list: true,
})

/**
 * Locks in Redis: every primitive is one Lua script (scripts/*.lua), timed by the server clock, fenced by a
 * counter that outlives the lock (by `fenceIdleTtlMs`), woken by one shared subscriber connection that wakes
 * one waiter per release.
 */
export class RedisBackend extends BackendBase {
  readonly name = 'redis'
  override readonly capabilities = CAPABILITIES
  readonly layout: KeyLayout
  private readonly commander: RedisCommander
  private readonly notifier: ReleaseNotifier
  private readonly deadlines: CommandDeadlines
  private readonly keys: KeyCache
  private readonly replicas: ReplicaWait | undefined
  private readonly calls: ScriptCalls
  private readonly publishAlways: string
  private readonly scripts: RedisScripts
  /**
   * Latchkey layout only (a mutex is the lock key as a string): locks whose mutex acquires and releases still
   * take the short scripts. Undefined for the Redisson layout, whose hash Java clients share.
   */
  private readonly contention: RecentContention | undefined
  private readonly operatorReads: OperatorReadDeps
  /** What giving back a grant nobody keeps needs (late-replies.ts). */
  private readonly grantReturns: GrantReturnDeps
  /**
   * How long after a short acquire that refreshed a lock's fencing counter expiry this process's short acquires
   * leave it alone (acquireMutexKeepFence): an eighth of the idle expiry, so the counter always has 7/8 of it left
   * when a token is taken (scripts/next-fence.lua). 0: always refresh.
   */
  private readonly fenceKeepMs: number

  constructor(options: RedisBackendOptions) {
    super()
    this.commander = adaptClient(options.client)
    this.layout = layoutNamed(options.layout ?? 'latchkey')
    this.deadlines = new CommandDeadlines(options.commandTimeoutMs ?? 5_000, this.commander.server)
    this.calls = new ScriptCalls(this.commander, this.deadlines, (script, reply, grantTo) =>
      lateReply(this.grantReturns, script, reply, grantTo),
    )
    this.keys = new KeyCache(this.layout)
    this.replicas = options.waitReplicas
    this.publishAlways = this.layout.alwaysPublish ? '1' : '0'
    // Redisson's RFencedLock INCRs the same counter key and would restart an expired one at 1.
    const fenceIdleMs = this.layout.name === 'redisson' ? 0 : (options.fenceIdleTtlMs ?? DEFAULT_FENCE_IDLE_MS)
    this.scripts = scriptsFor(fenceIdleMs)
    this.fenceKeepMs = fenceIdleMs / 8
    this.contention = this.layout.name === 'latchkey' ? new RecentContention(WATCH_TTL_MS) : undefined
    const { calls, keys, layout, commander } = this
    this.operatorReads = { calls, script: this.scripts.inspect, keys, layout, commander }
    this.notifier = new ReleaseNotifier(
      this.commander,
      options.subscriberLingerMs ?? 10_000,
      !this.layout.alwaysPublish,
      this.replicas === undefined,
    )
    const { notifier, scripts, publishAlways } = this
    this.grantReturns = { calls, scripts, keys, layout, notifier, publishAlways }
  }

  // Not async: the free mutex's first try (the uncontended acquire) and the rest each have a small async function
  // of their own, so the common case does not pay for the suspended frame of the whole. A throw still rejects.
  tryAcquire(request: AcquireRequest): Promise<AcquireResult> {
    try {
      const lockKeys = this.keys.keysOf(request)
      const field = this.layout.fieldOf(request.owner)
      const sub = this.notifier.claim(field, lockKeys.channel)
      const handed = sub?.takeGranted()
      if (handed !== undefined) return Promise.resolve(this.takeHandoff(request, handed))
      const mode = request.queue ? 'q' : sub === undefined ? '-' : sub.triedAt === 0 ? 'f' : 'w'
      // Latchkey layout: a mutex's first try takes the short script unless the lock was lately seen contended here.
      if (
        this.contention !== undefined &&
        request.kind === 'mutex' &&
        (mode === '-' || mode === 'f') &&
        !this.contention.has(lockKeys.id)
      ) {
        return this.tryFreeMutex(request, lockKeys, field, sub, mode)
      }
      return this.tryFull(request, lockKeys, field, sub, mode)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** The common case: a free mutex. Only a held lock needs the full script (one more round trip). */
  private async tryFreeMutex(
    request: AcquireRequest,
    lockKeys: LockKeys,
    field: string,
    sub: RedisReleaseSubscription | undefined,
    mode: TryMode,
  ): Promise<AcquireResult> {
    const sentAt = performance.now()
    if (sub !== undefined) sub.triedAt = sentAt
    // No lock-delay (the default) is no argument: each one costs the client more than Lua's `or 0` costs Redis.
    const args =
      request.lockDelayMs === 0
        ? [field, String(request.ttlMs)]
        : [field, String(request.ttlMs), String(request.lockDelayMs)]
    // The counter's PEXPIRE is a third of the script's own commands: sent once per fenceKeepMs per lock. Timed from
    // the send, which comes before the script runs (next-fence.lua), and only once it was answered.
    const keep = sentAt - lockKeys.fenceRefreshedAt < this.fenceKeepMs
    const script = keep ? this.scripts.acquireMutexKeepFence : this.scripts.acquireMutex
    const token = await this.calls.run(script, lockKeys.shortAcquire, args, request, request)
    if (!keep) lockKeys.fenceRefreshedAt = sentAt
    if (token !== undefined) {
      if (this.replicas !== undefined)
        return this.granted(request, { granted: true, token: String(token), remainingMs: undefined }, sentAt)
      return { acquired: true, token }
    }
    this.contention?.saw(lockKeys.id)
    return this.tryFull(request, lockKeys, field, sub, mode)
  }

  /** acquire.lua: any kind, held or free; registers the wait of a try that may wait. */
  private async tryFull(
    request: AcquireRequest,
    lockKeys: LockKeys,
    field: string,
    sub: RedisReleaseSubscription | undefined,
    mode: TryMode,
  ): Promise<AcquireResult> {
    const waitTtl = request.queue ? request.queueTtlMs : WATCH_TTL_MS
    // Packed into one argument: each argument costs the client more than Lua's string.match costs Redis.
    const spec = `${request.kind} ${request.ttlMs} ${request.lockDelayMs} ${request.permits} ${mode} ${waitTtl}`
    // A watcher names its process's wake channel, where a release granting it the lock tells it (see handoff
    // in scripts/handoff.lua).
    const wake = this.notifier.wakeChannel
    const args = wake !== undefined && (mode === 'w' || mode === 'f') ? [field, spec, wake] : [field, spec]
    const sentAt = performance.now()
    if (sub !== undefined) sub.triedAt = sentAt
    const reply = await this.calls.run(this.scripts.acquire, lockKeys.keys, args, request, request)
    if (!reply.granted) {
      if (reply.permitsInForce !== undefined) return { acquired: false, permitsInForce: reply.permitsInForce }
      if (this.contention !== undefined && request.kind === 'mutex') this.contention.saw(lockKeys.id)
      if (sub !== undefined) this.notifier.waiting(sub)
      return { acquired: false, retryAfterMs: reply.retryAfterMs }
    }
    return this.granted(request, reply, sentAt)
  }

  /**
   * The result of a try that `reply` granted, `sentAt` being when the try was sent. Not async without replicas
   * to wait for: a promise returned from `tryAcquire` would cost the hot path two more microtask turns.
   */
  private granted(
    request: AcquireRequest,
    reply: AcquireReply & { granted: true },
    sentAt: number,
  ): AcquireResult | Promise<AcquireResult> {
    if (this.replicas !== undefined) {
      return this.replicated(request, () => releaseGrant(this.grantReturns, request, reply.token)).then(() =>
        grantResult(request, reply, sentAt),
      )
    }
    return grantResult(request, reply, sentAt)
  }

  /**
   * The lease a release granted to this waiter (named in its message), taken from its subscription: no round trip.
   * The grant ran after this waiter's last failed try was sent, so the lease is timed from then. Not async without
   * replicas to wait for: `tryAcquire` returning a promise costs the handed-over waiter two more microtask turns,
   * behind whatever else the same socket read queued (bench/redis-handoff-trace.ts).
   */
  private takeHandoff(request: AcquireRequest, { token, result }: TakenGrant): AcquireResult | Promise<AcquireResult> {
    if (this.replicas === undefined) return result
    return this.replicated(request, () => releaseGrant(this.grantReturns, request, token)).then(() => result)
  }

  async renew(request: RenewRequest): Promise<boolean> {
    const keys = this.keys.keysOf(request).stateKeys
    const args = [this.layout.fieldOf(request.owner), String(request.ttlMs)]
    const ok = await this.calls.run(this.scripts.renew, keys, args, request)
    if (ok && this.replicas !== undefined) await this.replicated(request)
    return ok
  }

  // Not async, as tryAcquire: the short release of a mutex nobody waits for has a small async function of its own.
  release(request: HolderRef): Promise<boolean> {
    try {
      const lockKeys = this.keys.keysOf(request)
      const field = this.layout.fieldOf(request.owner)
      // Latchkey layout: a mutex nobody waits for is released by the short script, unless the lock was lately seen
      // contended here: then someone likely waits, and pass-mutex.lua hands the lock to the oldest watcher in one
      // round trip (release.lua when that is not the plain case).
      if (this.contention !== undefined && request.kind === 'mutex' && !this.contention.has(lockKeys.id)) {
        return this.releaseFreeMutex(request, lockKeys, field)
      }
      return this.releaseFull(request, lockKeys, field)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  private async releaseFreeMutex(request: HolderRef, lockKeys: LockKeys, field: string): Promise<boolean> {
    const done = await this.calls.run(this.scripts.releaseMutex, lockKeys.shortRelease, [field], request)
    if (done !== 'waited') return done === 'released'
    this.contention?.saw(lockKeys.id)
    return this.releaseFull(request, lockKeys, field)
  }

  /** pass-mutex.lua (a latchkey-layout mutex), else, or when that is not the plain case, release.lua. */
  private async releaseFull(request: HolderRef, lockKeys: LockKeys, field: string): Promise<boolean> {
    const { keys, channel } = lockKeys
    if (this.contention !== undefined && request.kind === 'mutex') {
      const args = [field, this.notifier.wakeChannel ?? '-', channel]
      const reply = await this.calls.run(this.scripts.passMutex, lockKeys.passKeys, args, request)
      const outcome = passed(this.notifier, reply)
      if (outcome !== undefined) return answer(outcome)
    }
    const args = [field, channel, this.publishAlways, this.notifier.wakeChannel ?? '-']
    const reply = await this.calls.run(this.scripts.release, keys, args, request)
    return answer(released(this.notifier, reply))
  }

  override async leaveQueue(request: HolderRef): Promise<void> {
    const { keys, channel } = this.keys.keysOf(request)
    const args = [this.layout.fieldOf(request.owner), channel, this.publishAlways]
    await this.calls.run(this.scripts.leaveQueue, keys, args, request)
  }

  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    const keys = this.keys.keysOf(ref).stateKeys
    return this.calls.run(this.scripts.isLocked, keys, [ref.kind, String(ref.permits)], ref)
  }

  async forceRelease(ref: LockRef): Promise<boolean> {
    const { stateKeys: keys, channel } = this.keys.keysOf(ref)
    return this.calls.run(this.scripts.forceRelease, keys, [channel, this.publishAlways], ref)
  }

  /** The holders and waiters of both families of `key` (scripts/inspect.lua, read-only). */
  override inspect(key: string): Promise<LockInspection> {
    return inspectLock(this.operatorReads, key)
  }

  /** SCANs for the layout's keys under `prefix` (each master of an ioredis Cluster), then inspects each lock. */
  override list(request: ListRequest): Promise<LockSummary[]> {
    return listLocks(this.operatorReads, request, (key) => this.inspect(key))
  }

  subscribe(ref: LockRef): ReleaseSubscription {
    return this.notifier.subscribe(this.keys.keysOf(ref).channel, ref.kind)
  }

  /** Closes the subscriber connection the backend opened; the client handed in stays open. */
  override async close(): Promise<void> {
    await this.notifier.close()
  }

  /** WAITs for the configured replicas; on too few acknowledgements undoes the write and fails. */
  private replicated(ref: LockRef, undo?: () => Promise<unknown>): Promise<void> {
    return waitForReplicas(this.commander, this.deadlines, this.replicas as ReplicaWait, ref, undo)
  }
}
