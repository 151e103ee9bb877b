/**
 * One ZooKeeper session and its liveness watchdog. node-zookeeper-client never notices a silent partition
 * (no read timeout), so we measure it ourselves, with Curator's semantics: SUSPENDED after 2/3 of the session
 * timeout without a server reply, LOST after the full timeout. Both are counted from when the last answered
 * request was *sent*: the server heard from us no earlier than that, so it cannot expire the session (and hand
 * our lock to someone else) before we have declared it lost.
 */
import { InFlightCalls } from '../../backend/in-flight-calls.js'
import { BackendUnavailableError } from '../../errors.js'
import { closeClient, mapError, readLong, ZK, type ZkClient, type ZkStat, zkCode, zkServers } from './zk-client.js'

type Start<T> = (callback: (error: unknown, result: T) => void) => void

/** Connection health as the watchdog sees it. */
export type ConnectionState = 'connected' | 'suspended' | 'lost'

/** One session of one client. Once lost, it stays lost: the backend opens a new one. */
export class ZkConnection {
  state: ConnectionState = 'connected'
  /** Why the session was declared lost. */
  lostReason: string | undefined
  /** Latest estimate of (server wall clock - local wall clock), a lower bound; from znode mtimes. */
  private clockOffsetMs = 0
  private lastAckSentAt: number
  private probing = false
  private readonly pending = new InFlightCalls()
  private readonly timer: NodeJS.Timeout
  private readonly onExpired = (): void => this.lose('the ZooKeeper session expired')
  /**
   * Counts the client's connects: the watch events a reconnect brings (SetWatches) come in the order of the watched
   * paths, not of the changes, so an ordering argued from events (zk-first-in-line.ts) holds only within one.
   */
  connects = 0
  /** A reconnect may negotiate a shorter timeout (another server's limits): the watchdog keeps the shortest. */
  private readonly onConnected = (): void => {
    this.connects++
    const negotiated = this.client.getSessionTimeout()
    if (negotiated > 0 && negotiated < this.sessionTimeoutMs) this.sessionTimeoutMs = negotiated
  }

  constructor(
    readonly client: ZkClient,
    readonly generation: number,
    public sessionTimeoutMs: number,
    private readonly owned: boolean,
    private readonly onLost: (connection: ZkConnection) => void,
    /** The servers (`h1:2181,h2:2181`), named in every error of this session. */
    readonly server = zkServers(client),
  ) {
    this.lastAckSentAt = performance.now()
    client.on('expired', this.onExpired)
    client.on('connected', this.onConnected)
    this.timer = setInterval(() => this.tick(), Math.max(20, Math.floor(sessionTimeoutMs / 12)))
    this.timer.unref()
  }

  get alive(): boolean {
    return this.state !== 'lost'
  }

  /** Runs one request; rejects with `BackendUnavailableError` on connection trouble or when the session is lost. */
  run<T>(what: string, start: Start<T>): Promise<T> {
    if (!this.alive) return Promise.reject(this.lostError())
    const sentAt = performance.now()
    return new Promise<T>((resolve, reject) => {
      const call = this.pending.add((error) => reject(mapError(error, what, this.server)))
      start((error, result) => {
        if (!this.pending.remove(call)) return
        const code = zkCode(error)
        // Any answer from the server, even "no node", proves the session alive when the request was sent.
        if (error === null || error === undefined || (code !== undefined && code < -100)) this.acked(sentAt)
        if (code === ZK.SESSION_EXPIRED) this.lose('the ZooKeeper session expired')
        if (error !== null && error !== undefined) reject(mapError(error, what, this.server))
        else resolve(result)
      })
    })
  }

  /** Records the server time seen in a stat received just now. */
  observe(stat: ZkStat): void {
    this.clockOffsetMs = Number(readLong(stat.mtime)) - Date.now()
  }

  /** The server's wall clock now, as estimated from recent stats (an approximation; verify before acting). */
  serverNow(): number {
    return Date.now() + this.clockOffsetMs
  }

  /** Declares the session lost: fails pending requests, closes (or abandons) the client, tells the backend. */
  lose(reason: string): void {
    if (!this.alive) return
    this.state = 'lost'
    this.lostReason = reason
    clearInterval(this.timer)
    this.client.removeListener('expired', this.onExpired)
    this.client.removeListener('connected', this.onConnected)
    const error = this.lostError()
    this.pending.failAll(error)
    // An owned client is closed at once: nothing more is sent, so the server expires the session (and our
    // ephemeral nodes) at most one timeout after the last packet it got. Abandon, never resurrect.
    if (this.owned) void closeClient(this.client, 0)
    this.onLost(this)
  }

  /** Closes the session cleanly (releasing its ephemeral nodes at once when the server is reachable). */
  async close(): Promise<void> {
    if (this.alive) {
      this.state = 'lost'
      this.lostReason = 'the backend was closed'
      clearInterval(this.timer)
      this.client.removeListener('expired', this.onExpired)
      this.client.removeListener('connected', this.onConnected)
      this.pending.failAll(this.lostError())
    }
    if (this.owned) await closeClient(this.client, 1_000)
  }

  lostError(): BackendUnavailableError {
    return new BackendUnavailableError(
      `zookeeper backend at ${this.server}: the session is gone (${this.lostReason ?? 'unknown'}); a new one is opened on the next call`,
    )
  }

  private acked(sentAt: number): void {
    if (sentAt > this.lastAckSentAt) this.lastAckSentAt = sentAt
    if (this.state === 'suspended' && performance.now() - this.lastAckSentAt < (this.sessionTimeoutMs * 2) / 3) {
      this.state = 'connected'
    }
  }

  private tick(): void {
    const silent = performance.now() - this.lastAckSentAt
    if (silent >= this.sessionTimeoutMs) {
      this.lose(`no reply from ZooKeeper for ${Math.round(silent)} ms (session timeout ${this.sessionTimeoutMs} ms)`)
      return
    }
    if (silent >= (this.sessionTimeoutMs * 2) / 3) this.state = 'suspended'
    if (!this.probing && silent >= this.sessionTimeoutMs / 3) {
      this.probing = true
      this.run('ping', (cb) => this.client.exists('/', cb))
        .catch(() => undefined)
        .finally(() => {
          this.probing = false
        })
    }
  }
}
