/**
 * The connections a session strategy pins: one per held lock, watched for its end (the server freed the lock with
 * the session), with the lease timer that frees the lock when the holder stops renewing, since the server never
 * times these locks out; and the connections a try is taking a lock on.
 */
import { stateKey } from '../../backend/grant-rules.js'
import type { LocalNotifier } from '../../backend/local-notifier.js'
import type { AcquireRequest } from '../../backend/types.js'
import { holdId, type SessionConnection, type SessionHold } from './session-hold.js'
import type { PoolRunner } from './sql-runner.js'

/** The held locks of one session backend, by {@link holdId}, and the connections its tries are taking locks on. */
export class SessionPins<C extends SessionConnection> {
  readonly holds = new Map<string, SessionHold<C>>()
  /** Connections a try is taking a lock on: forceRemote must spare their sessions too. */
  readonly trying = new Set<C>()

  constructor(
    private readonly db: PoolRunner<C>,
    private readonly notifier: LocalNotifier,
    /** The strategy's unlock (SessionBackend.unlockOn). */
    private readonly unlockOn: (hold: SessionHold<C>) => Promise<boolean>,
  ) {}

  /** Number of pinned connections. */
  get size(): number {
    return this.holds.size
  }

  /** Records the lock `granted` to `request` on `connection`, watched for the connection's end, timed for `ttlMs`. */
  pin(request: AcquireRequest, connection: C, granted: { token: bigint; detail: string }): void {
    const hold: SessionHold<C> = {
      id: holdId(request),
      key: stateKey(request),
      owner: request.owner,
      kind: request.kind,
      connection,
      detail: granted.detail,
      token: granted.token,
      alive: true,
      timer: undefined,
      unwatch: () => undefined,
      onLost: undefined,
    }
    hold.unwatch = watch(connection, () => {
      // A dying connection reports both an error and its end: the loss is told once.
      if (!hold.alive) return
      hold.alive = false
      // The server freed the lock with the session: wake this process's waiters, and tell the holder.
      this.notifier.notify(hold.key)
      const onLost = hold.onLost
      hold.onLost = undefined
      onLost?.('its connection ended, and the server freed the lock with the session')
    })
    // The connection may have died between the grant and the watch (a FATAL read in the same chunk as the
    // grant's reply): the lock went with the session, so the lease is lost from the start.
    if (this.db.hasFailed(connection)) hold.alive = false
    this.holds.set(hold.id, hold)
    this.arm(hold, request.ttlMs)
  }

  /** (Re)starts the lease timer: a holder that stops renewing loses the lock after `ttlMs`. */
  arm(hold: SessionHold<C>, ttlMs: number): void {
    clearTimeout(hold.timer)
    hold.timer = setTimeout(() => this.drop(hold, true), ttlMs)
    hold.timer.unref()
  }

  unpin(hold: SessionHold<C>): void {
    clearTimeout(hold.timer)
    hold.unwatch()
    this.holds.delete(hold.id)
  }

  /** Lets go of a hold without a caller waiting: unlock quietly, or destroy the connection if that fails. */
  drop(hold: SessionHold<C>, unlock: boolean): void {
    if (this.holds.get(hold.id) !== hold) return
    this.unpin(hold)
    if (!unlock || !hold.alive) {
      this.db.giveBack(hold.connection, false)
      this.notifier.notify(hold.key)
      return
    }
    const done = (ok: boolean): void => {
      this.db.giveBack(hold.connection, ok)
      this.notifier.notify(hold.key)
    }
    this.unlockOn(hold).then(done, () => done(false))
  }

  /** The server sessions of the connections this process pins for held locks or is trying a lock on. */
  sessions(sessionOf: (connection: C) => number | undefined): Set<number> {
    const sessions = new Set<number>()
    for (const connection of [...[...this.holds.values()].map((hold) => hold.connection), ...this.trying]) {
      const session = sessionOf(connection)
      if (session !== undefined) sessions.add(session)
    }
    return sessions
  }
}

/** Calls `onDead` when the connection reports an error or its end; returns the detach function. */
function watch(connection: SessionConnection, onDead: () => void): () => void {
  connection.on('error', onDead)
  connection.on('end', onDead)
  return () => {
    connection.removeListener('error', onDead)
    connection.removeListener('end', onDead)
  }
}
