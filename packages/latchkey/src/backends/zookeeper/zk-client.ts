import { BackendUnavailableError } from '../../errors.js'
import { ZkWireClient } from './wire/zk-wire-client.js'

/** A znode's metadata; the zxids and times are 8-byte big-endian buffers, as the client returns them. */
export interface ZkStat {
  readonly czxid: Buffer
  readonly mzxid: Buffer
  readonly ctime: Buffer
  readonly mtime: Buffer
  readonly version: number
  readonly ephemeralOwner: Buffer
  readonly numChildren: number
}

/** A watch notification. */
export interface ZkEvent {
  readonly type: number
  readonly path: string
}

type Callback<T> = (error: Error | ZkErrorLike | null, result: T) => void
type StatCallback = (error: Error | ZkErrorLike | null, stat: ZkStat) => void

/** The client methods latchkey calls (`node-zookeeper-client` 1.x `Client` satisfies it). */
export interface ZkClient {
  connect(): void
  close(): void
  create(path: string, data: Buffer, mode: number, callback: Callback<string>): void
  remove(path: string, version: number, callback: (error: Error | ZkErrorLike | null) => void): void
  exists(path: string, callback: StatCallback): void
  getChildren(path: string, callback: Callback<string[]>): void
  getChildren(path: string, watcher: (event: ZkEvent) => void, callback: Callback<string[]>): void
  getData(path: string, callback: (error: Error | ZkErrorLike | null, data: Buffer, stat: ZkStat) => void): void
  getData(
    path: string,
    watcher: (event: ZkEvent) => void,
    callback: (error: Error | ZkErrorLike | null, data: Buffer, stat: ZkStat) => void,
  ): void
  setData(path: string, data: Buffer | null, version: number, callback: StatCallback): void
  /** A multi-op request: its ops commit atomically, at one zxid. */
  transaction(): ZkTransaction
  /** CREATE2 (the created path and the node's stat in one reply), where the client has it (latchkey's own does). */
  create2?(
    path: string,
    data: Buffer,
    mode: number,
    callback: (error: Error | ZkErrorLike | null, result: { path: string; stat: ZkStat }) => void,
  ): void
  getSessionTimeout(): number
  on(event: string, listener: () => void): unknown
  removeListener(event: string, listener: () => void): unknown
}

/** node-zookeeper-client's `Transaction` (the ops latchkey uses). */
export interface ZkTransaction {
  create(path: string, data: Buffer, mode: number): ZkTransaction
  setData(path: string, data: Buffer | null, version: number): ZkTransaction
  commit(callback: (error: Error | ZkErrorLike | null, results: readonly ZkOpResult[]) => void): void
}

/** One op's result in a committed transaction: a create's path, a setData's stat. */
export interface ZkOpResult {
  readonly type: number
  readonly path?: string
  readonly stat?: ZkStat
}

/** What node-zookeeper-client's `Exception` looks like. */
export interface ZkErrorLike {
  readonly code: number
  readonly name: string
  readonly message?: string
}

/** ZooKeeper error codes (KeeperException.Code) latchkey reacts to. */
export const ZK = Object.freeze({
  CONNECTION_LOSS: -4,
  OPERATION_TIMEOUT: -7,
  NO_NODE: -101,
  BAD_VERSION: -103,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
  EPHEMERAL_SEQUENTIAL: 3,
  PERSISTENT: 0,
  NODE_DELETED: 2,
  NODE_DATA_CHANGED: 3,
  NODE_CHILDREN_CHANGED: 4,
})

/** The ZooKeeper error code of `error`, or undefined for other errors. */
export function zkCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'number' ? code : undefined
}

/** Errors that mean "the connection or session is in trouble": retryable for the caller. */
export function isConnectionError(error: unknown): boolean {
  const code = zkCode(error)
  return code === ZK.CONNECTION_LOSS || code === ZK.OPERATION_TIMEOUT || code === ZK.SESSION_EXPIRED
}

/** Maps a client error to `BackendUnavailableError` naming `server` when retrying may help; others pass through. */
export function mapError(error: unknown, what: string, server: string): unknown {
  if (error instanceof BackendUnavailableError || !isConnectionError(error)) return error
  return new BackendUnavailableError(`zookeeper backend at ${server}: ${what} failed (${String(error)}); try again`, {
    cause: error,
  })
}

/** The servers a client connects to (`h1:2181,h2:2181`): latchkey's own names them, node-zookeeper-client's string. */
export function zkServers(client: ZkClient): string {
  const own = (client as { servers?: unknown }).servers
  if (typeof own === 'string') return own
  const parser = (client as { connectionManager?: { connectionStringParser?: { getConnectionString?(): unknown } } })
    .connectionManager?.connectionStringParser
  const cs = parser?.getConnectionString?.()
  return typeof cs === 'string' ? (cs.split('/')[0] ?? cs) : 'unknown servers'
}

/** Runs one callback-style client call as a promise. */
export function call<T>(start: (callback: Callback<T>) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    start((error, result) => (error ? reject(error) : resolve(result)))
  })
}

/** Opens (connects) latchkey's own client (wire/zk-wire-client.ts) to `connectString`; the caller owns it. */
export function openClient(connectString: string, sessionTimeoutMs: number): ZkClient {
  const client = new ZkWireClient(connectString, sessionTimeoutMs)
  client.connect()
  return client
}

/**
 * Closes a client and makes sure its socket goes away after `graceMs`: a close request on a silently partitioned
 * socket is never answered (node-zookeeper-client waits for it forever, upstream issue #20), which would keep the
 * process alive.
 */
export function closeClient(client: ZkClient, graceMs: number): Promise<void> {
  const manager = (client as { connectionManager?: { socket?: { destroy(): void; destroyed?: boolean } } })
    .connectionManager
  return new Promise((resolve) => {
    let finished = false
    const done = (): void => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      client.removeListener('disconnected', done)
      const socket = manager?.socket
      if (socket !== undefined && socket.destroyed !== true) socket.destroy()
      ;(client as { destroy?(): void }).destroy?.()
      resolve()
    }
    const timer = setTimeout(done, graceMs)
    timer.unref()
    client.on('disconnected', done)
    try {
      client.close()
    } catch {
      done()
    }
    if (graceMs === 0) done()
  })
}

/** An 8-byte big-endian buffer (zxid, time) as a bigint. */
export function readLong(buffer: Buffer): bigint {
  return buffer.readBigInt64BE(0)
}
