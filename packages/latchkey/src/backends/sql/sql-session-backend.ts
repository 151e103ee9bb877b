/**
 * The common part of the session-scoped SQL strategies (MySQL `GET_LOCK`, MySQL `FOR UPDATE`, PostgreSQL
 * advisory locks): each held lock pins one pool connection, and the server frees the lock when that
 * connection ends. So the lease *is* the connection: a dropped or killed connection is a lost lease, which
 * `watchLease` reports the moment the connection ends (and the core turns into `lease.signal` aborting); `renew`
 * reports it too, for a core that does not watch.
 *
 * The server never times these locks out, so the lease's `ttlMs` is kept here (session-pins.ts): a timer that
 * frees the lock when the holder stops renewing (the watchdog renews every `ttlMs / 3`). A crashed process frees
 * its locks at once, through its connections closing.
 */
import { BackendBase } from '../../backend/backend-base.js'
import { stateKey } from '../../backend/grant-rules.js'
import type { LockInspection } from '../../backend/inspection.js'
import { LocalNotifier } from '../../backend/local-notifier.js'
import type {
  AcquireRequest,
  AcquireResult,
  CallOptions,
  HolderRef,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from '../../backend/types.js'
import { UnsupportedError } from '../../errors.js'
import { holdId, type SessionConnection, type SessionHold } from './session-hold.js'
import { type LocalSession, type ServerLockState, sessionInspection } from './session-inspect.js'
import { SessionPins } from './session-pins.js'
import type { PoolRunner } from './sql-runner.js'

/** What a session strategy does on its pinned connection; `db` lends the connections. */
export abstract class SessionBackend<
  C extends SessionConnection,
  R extends PoolRunner<C> = PoolRunner<C>,
> extends BackendBase {
  protected readonly notifier = new LocalNotifier()
  private readonly pins: SessionPins<C>
  private closed = false

  /** Tries the server lock on `connection`; `detail` is what `unlock` will need. */
  protected abstract lockOn(connection: C, request: AcquireRequest): Promise<{ token: bigint; detail: string } | false>
  /** Frees the server lock; true when the server confirmed it. Throws on connection errors. */
  protected abstract unlockOn(hold: SessionHold<C>): Promise<boolean>
  /** Whether the pinned connection still holds the lock; throws (mapped) on connection errors. */
  protected abstract stillHeld(hold: SessionHold<C>): Promise<boolean>
  /** Whether anyone (in any process) holds the lock. */
  abstract override isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean>
  /**
   * Ends the sessions of holders in other processes; true if one was found. `spare()`: the sessions this process
   * pins or tries a lock on, never ended (a local waiter may have taken the lock since its local holders were
   * released); called after the server named the holder, when a local grant it saw is already pinned or trying.
   */
  protected abstract forceRemote(ref: LockRef, spare: () => ReadonlySet<number>): Promise<boolean>
  /** The sessions the server lists as holding (and queueing on) `key` (the family state key). */
  protected abstract serverState(key: string): Promise<ServerLockState>
  /** The server's id of a pinned connection's session, where the driver tells it. */
  protected abstract sessionOf(connection: C): number | undefined
  /** This process's waiting sessions on `key` (advisory writer intents); none by default. */
  protected localWaiters(_key: string): LocalSession[] {
    return []
  }

  /**
   * The sessions holding the lock, as the server lists them: this process's with their owner and kind, the
   * others as `session:<id>`. No expiry and no token (the server keeps neither).
   */
  override async inspect(key: string): Promise<LockInspection> {
    const state = await this.serverState(key)
    const local = [...this.pins.holds.values()]
      .filter((hold) => hold.key === key && hold.alive)
      .map((hold) => ({
        session: this.sessionOf(hold.connection),
        owner: hold.owner,
        kind: hold.kind,
        ...(this.capabilities.fencing === 'native' ? { token: hold.token } : {}),
      }))
    return sessionInspection(key, state, local, this.localWaiters(key))
  }

  constructor(protected readonly db: R) {
    super()
    this.pins = new SessionPins(db, this.notifier, (hold) => this.unlockOn(hold))
  }

  /** Takes a connection from the pool (bounded wait). */
  protected connect(): Promise<C> {
    return this.db.connect()
  }

  /** Returns a connection to the pool, or destroys it when it may still hold something. Never throws. */
  private giveBack(connection: C, healthy: boolean): void {
    this.db.giveBack(connection, healthy)
  }

  /**
   * Honours `options.signal`: a try the core has abandoned (it waited for a pool connection past the acquire's
   * deadline) gives the connection back instead of taking a server lock that would only be released again.
   */
  override async tryAcquire(request: AcquireRequest, options?: CallOptions): Promise<AcquireResult> {
    if (!this.capabilities.kinds.includes(request.kind)) {
      throw new UnsupportedError(`${this.name} backend does not implement ${request.kind} locks`)
    }
    const id = holdId(request)
    const existing = this.pins.holds.get(id)
    if (existing?.alive === true) return { acquired: true, token: existing.token }
    const connection = await this.connect()
    if (options?.signal?.aborted) {
      this.giveBack(connection, true)
      throw options.signal.reason
    }
    let granted: { token: bigint; detail: string } | false
    // A try in flight may take the lock a forced release just freed: forceRemote must spare its session too.
    this.pins.trying.add(connection)
    try {
      granted = await this.lockOn(connection, request)
    } catch (error) {
      this.giveBack(connection, false)
      throw error
    } finally {
      this.pins.trying.delete(connection)
    }
    if (granted === false) {
      this.giveBack(connection, true)
      return { acquired: false }
    }
    this.pins.pin(request, connection, granted)
    return { acquired: true, token: granted.token }
  }

  async renew(request: RenewRequest): Promise<boolean> {
    const hold = this.pins.holds.get(holdId(request))
    if (hold === undefined || !hold.alive) return false
    if (!(await this.probe(hold)) || !hold.alive) {
      this.pins.drop(hold, false)
      return false
    }
    this.pins.arm(hold, request.ttlMs)
    return true
  }

  async release(request: HolderRef): Promise<boolean> {
    const hold = this.pins.holds.get(holdId(request))
    return hold === undefined ? false : this.releaseHold(hold)
  }

  private async releaseHold(hold: SessionHold<C>): Promise<boolean> {
    this.pins.unpin(hold)
    if (!hold.alive) {
      this.giveBack(hold.connection, false)
      return false
    }
    let confirmed = false
    try {
      confirmed = await this.unlockOn(hold)
    } finally {
      this.giveBack(hold.connection, confirmed)
      this.notifier.notify(hold.key)
    }
    return confirmed
  }

  override async leaveQueue(_request: HolderRef): Promise<void> {
    // Session strategies keep no line by default: nothing to leave.
  }

  async forceRelease(ref: LockRef): Promise<boolean> {
    const key = stateKey(ref)
    const local = [...this.pins.holds.values()].filter((hold) => hold.key === key)
    // Unlock this process's holders first, so the server-side search below cannot find (and kill) them.
    await Promise.all(local.map((hold) => this.releaseHold(hold).catch(() => false)))
    const remote = await this.forceRemote(ref, () => this.pins.sessions((connection) => this.sessionOf(connection)))
    this.notifier.notify(key)
    return local.length > 0 || remote
  }

  subscribe(ref: LockRef): ReleaseSubscription {
    return this.notifier.subscribe(stateKey(ref), ref.kind)
  }

  /**
   * Calls `onLost` once when the connection holding `holder`'s lock ends (killed, dropped, the server crashed):
   * the server freed the lock with the session, and waiting for the next renewal (a third of the TTL) would let
   * the holder work on, and write, while another process may already hold the lock.
   */
  watchLease(holder: HolderRef, onLost: (reason: string) => void): () => void {
    const hold = this.pins.holds.get(holdId(holder))
    if (hold === undefined || !hold.alive) {
      queueMicrotask(() => onLost('it is not held'))
      return () => undefined
    }
    hold.onLost = onLost
    return () => {
      if (hold.onLost === onLost) hold.onLost = undefined
    }
  }

  /** Frees every lock this backend holds and gives the connections back; the pool stays open. */
  override async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([...this.pins.holds.values()].map((hold) => this.releaseHold(hold).catch(() => undefined)))
  }

  /**
   * Whether `hold` still has its lock. A dead connection is a lost lease, not an error: the server freed the
   * lock with the session. Other errors (a timeout on a live connection) leave the answer unknown and are thrown.
   */
  private async probe(hold: SessionHold<C>): Promise<boolean> {
    try {
      return await this.stillHeld(hold)
    } catch (error) {
      // Errors arrive mapped to BackendUnavailableError; the driver's own error is its cause.
      if (this.db.isFatal((error as { cause?: unknown }).cause ?? error)) return false
      throw error
    }
  }

  /** Number of pinned connections (for tests and leak checks). */
  get pinned(): number {
    return this.pins.size
  }
}
