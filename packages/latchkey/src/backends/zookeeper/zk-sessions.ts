/**
 * Opens ZooKeeper sessions on demand: one live session at a time, a new one transparently after a loss.
 */
import { BackendUnavailableError } from '../../errors.js'
import { batchWrites } from './zk-batched-writes.js'
import { call, closeClient, openClient, type ZkClient } from './zk-client.js'
import { ZkConnection } from './zk-connection.js'
import { decodeRepliesLean } from './zk-lean-replies.js'
import { removeQuietly } from './zk-node-ops.js'

/** What the session source needs from the backend's options. */
export interface SessionSettings {
  readonly connectString: string | undefined
  readonly client: ZkClient | undefined
  readonly sessionTimeoutMs: number
  readonly connectTimeoutMs: number
  /** `h1:2181,h2:2181`, named in errors (for a client handed in, read from it). */
  readonly server: string
}

export class ZkSessions {
  /** The live session, if any. */
  live: ZkConnection | undefined
  private opening: Promise<ZkConnection> | undefined
  private generation = 0
  private closed = false
  /** Nodes of a lost session on a client we do not own: deleted once that client is usable again. */
  private readonly orphans = new Set<string>()

  constructor(
    private readonly settings: SessionSettings,
    private readonly onLost: (conn: ZkConnection) => void,
  ) {}

  /** The live session, opening one if needed; rejects with `BackendUnavailableError` when none can be had. */
  async current(): Promise<ZkConnection> {
    if (this.closed)
      throw new BackendUnavailableError(`zookeeper backend at ${this.settings.server}: the backend was closed`)
    if (this.live?.alive === true) return this.live
    this.opening ??= this.open().finally(() => {
      this.opening = undefined
    })
    return this.opening
  }

  /**
   * Remembers nodes of a lost session for deletion on the next one. Only for a client we do not own: it may
   * still hold that session (our watchdog gave up on it, the server did not), and we must not leave them.
   */
  abandon(paths: readonly string[]): void {
    if (this.settings.client !== undefined) for (const path of paths) this.orphans.add(path)
  }

  /** Stops opening sessions; resolves the live one (or the one being opened) for the caller to close. */
  async close(): Promise<ZkConnection | undefined> {
    this.closed = true
    const conn = this.live ?? (await this.opening?.catch(() => undefined))
    this.live = undefined
    return conn
  }

  private async open(): Promise<ZkConnection> {
    const { settings } = this
    const owned = settings.client === undefined
    const client = settings.client ?? openClient(settings.connectString as string, settings.sessionTimeoutMs)
    if (!owned) {
      // A node-zookeeper-client handed in: its writes and reply decoders made leaner from outside.
      batchWrites(client)
      decodeRepliesLean()
    }
    await waitConnected(client, settings.connectTimeoutMs, owned, settings.server)
    // The server may have clamped the timeout; the watchdog must use the shorter of the two.
    const negotiated = client.getSessionTimeout() || settings.sessionTimeoutMs
    const conn = new ZkConnection(
      client,
      ++this.generation,
      Math.min(settings.sessionTimeoutMs, negotiated),
      owned,
      (c) => {
        if (this.live === c) this.live = undefined
        this.onLost(c)
      },
      settings.server,
    )
    this.live = conn
    for (const path of [...this.orphans]) {
      this.orphans.delete(path)
      void removeQuietly(conn, path).catch(() => undefined)
    }
    return conn
  }
}

/** Resolves once `client` has a live session; rejects with `BackendUnavailableError` after `timeoutMs`. */
async function waitConnected(client: ZkClient, timeoutMs: number, owned: boolean, server: string): Promise<void> {
  const state = (client as { getState?(): { name?: string } }).getState?.()
  if (state?.name === 'SYNC_CONNECTED') return
  if (state?.name === 'EXPIRED') {
    throw new BackendUnavailableError(
      `zookeeper backend at ${server}: the session of the client passed as \`client\` expired`,
    )
  }
  try {
    await call<void>((cb) => {
      const timer = setTimeout(() => done(new Error(`no ZooKeeper session within ${timeoutMs} ms`)), timeoutMs)
      const onConnected = (): void => done(null)
      const done = (error: Error | null): void => {
        clearTimeout(timer)
        client.removeListener('connected', onConnected)
        cb(error, undefined)
      }
      client.on('connected', onConnected)
    })
  } catch (error) {
    if (owned) void closeClient(client, 0)
    throw new BackendUnavailableError(`zookeeper backend at ${server}: cannot connect (${(error as Error).message})`, {
      cause: error,
    })
  }
}
