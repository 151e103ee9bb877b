import type { Redis } from 'ioredis'
import type { SaleStore } from '../../store/types.js'
import { OutboxRelay, type RelayOptions } from './outbox-relay.js'
import { RedisReserve } from './redis-reserve.js'

/** Options of {@link openReserve}: the relay's, plus the deployment's key prefix. */
export interface ReserveOptions extends RelayOptions {
  /**
   * Names the deployment in Redis: every service sharing one SQL store must use the same prefix, and two
   * deployments sharing a Redis must not. Default `flash-sale`.
   */
  readonly keyPrefix?: string
}

/** The reserve strategy of one service process: the reserve script's client and the outbox relay. */
export interface OpenReserve {
  readonly reserve: RedisReserve
  readonly relay: OutboxRelay
  /** Stops the relay (after the entries in hand), then closes both Redis connections. */
  close(): Promise<void>
}

/**
 * Connects to Redis at `url` (two connections: commands, and the relay's blocking reads) and starts the
 * outbox relay into `store`. ioredis is loaded only here: a service without Redis never needs it.
 *
 * @example
 * const { reserve, close } = await openReserve('redis://127.0.0.1:6379', store)
 */
export async function openReserve(url: string, store: SaleStore, options: ReserveOptions = {}): Promise<OpenReserve> {
  const { Redis } = await import('ioredis')
  const connect = async (name: string): Promise<Redis> => {
    // lazyConnect + connect(): a wrong URL fails here, at start, instead of on the first order.
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 3, connectionName: name })
    client.on('error', () => undefined) // surfaces on each command: a 503, or a relay retry
    await client.connect()
    return client
  }
  const client = await connect('flash-sale-reserve')
  let blocking: Redis
  try {
    blocking = await connect('flash-sale-relay')
  } catch (error) {
    client.disconnect()
    throw error
  }
  const reserve = new RedisReserve(client, options.keyPrefix)
  const relay = new OutboxRelay(store, client, blocking, reserve.keys, options)
  relay.start()
  return {
    reserve,
    relay,
    async close() {
      await relay.close()
      await client.quit().catch(() => client.disconnect())
    },
  }
}

/**
 * Deletes every Redis key of the deployment `keyPrefix` (stock, buyers, outbox, dead letters): for demos and
 * tests that made up a prefix of their own.
 *
 * @example
 * await deleteReserveKeys('redis://127.0.0.1:6379', 'flash-sale-demo-1f2e3d4c')
 */
export async function deleteReserveKeys(url: string, keyPrefix: string): Promise<void> {
  const { Redis } = await import('ioredis')
  const client = new Redis(url, { lazyConnect: true })
  client.on('error', () => undefined)
  try {
    await client.connect()
    // `{` and `}` are plain characters in a SCAN pattern; escape the few that are not.
    await unlinkMatching(client, [`{${keyPrefix.replace(/[*?[\]\\]/g, '\\$&')}}:*`])
  } finally {
    client.disconnect()
  }
}

/** UNLINKs every key matching one of the SCAN `patterns` (SCAN, so the server is never blocked). */
export async function unlinkMatching(client: Redis, patterns: readonly string[]): Promise<void> {
  for (const pattern of patterns) {
    let cursor = '0'
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      cursor = next
      if (keys.length > 0) await client.unlink(...keys)
    } while (cursor !== '0')
  }
}
