/**
 * What the etcd floors share: latchkey's own transport (the built package, as the latchkey contenders run it; it
 * has no public entry point) and one lease for the process, kept alive as Go's session lease is, by a keepalive every
 * third of its TTL off the lock path.
 */
import type { EtcdWatcher } from '../../packages/latchkey/src/backends/etcd/etcd-client.js'
import { type KeyRange, prefixRange } from '../../packages/latchkey/src/backends/etcd/keys.js'
import type {
  openHttp2EtcdClient as OpenWireClient,
  WireEtcdClient,
} from '../../packages/latchkey/src/backends/etcd/wire/http2-etcd-client.js'

const WIRE_CLIENT = '../../packages/latchkey/dist/backends/etcd/wire/http2-etcd-client.js'
const TTL_S = 10

/** A wire client of `url` and a lease of 10 s for the process. */
export interface WireSession {
  readonly client: WireEtcdClient
  readonly lease: string
  /** Stops the keepalive, revokes the lease (which takes the process's keys with it) and closes the client. */
  close(): Promise<void>
}

export async function openWireSession(url: string): Promise<WireSession> {
  const wire = (await import(WIRE_CLIENT)) as { openHttp2EtcdClient: typeof OpenWireClient }
  const client = wire.openHttp2EtcdClient({ hosts: [url], callTimeoutMs: 10_000 })
  const { ID: lease } = await client.leaseClient.leaseGrant({ TTL: TTL_S })
  const stream = await client.leaseClient.leaseKeepAlive()
  stream.on('data', () => {})
  stream.on('error', () => {})
  stream.on('end', () => {})
  const timer = setInterval(() => stream.write({ ID: lease }), (TTL_S * 1_000) / 3)
  return {
    client,
    lease,
    async close() {
      clearInterval(timer)
      stream.end()
      await client.leaseClient.leaseRevoke({ ID: lease }).catch(() => undefined)
      client.close()
    },
  }
}

/** The range of the one key `key`: `[key, key + NUL)`. */
export function keyRange(key: Buffer): KeyRange {
  return { start: key, end: Buffer.concat([key, Buffer.from([0])]) }
}

/**
 * A watch of nothing under `prefix`, once connected. The transport drops its watch stream with its last watch (so
 * does Go's client); this one keeps the stream up, as a lock's own watches do in a busy process, so that a watch of
 * one key costs one message on an open stream, the least a recipe that watches a key per wait can pay.
 */
export async function keepWatchStream(client: WireEtcdClient, prefix: string): Promise<EtcdWatcher> {
  const keeper = client.watch().inRange(prefixRange(prefix)).only('delete').watcher()
  await new Promise<void>((resolve) => keeper.on('connected', () => resolve()))
  return keeper
}
