/**
 * The Redis backend and RedLock recognise a client and judge it offline by one rule (client-kind.ts): a client
 * waiting to reconnect is offline for both; a closed node-redis client is not (it refuses commands itself).
 */
import { describe, expect, it } from 'vitest'
import { adaptClient, type RedisClientLike } from '../src/backends/redis/client-adapter.js'
import { adaptRedlockClient } from '../src/backends/redlock/redlock-node.js'
import { eventually } from '../src/testing/index.js'
import { ioredisClient, nodeRedisClient } from './support/redis-backend-module.js'
import { privateRedisServer } from './support/redis-server-suite.js'

/** Whether the Redis backend's adapter and a RedLock node call `client` offline: [backend, redlock]. */
function offline(client: unknown): [boolean, boolean] {
  return [adaptClient(client as RedisClientLike).offline, adaptRedlockClient(client, 0).offline]
}

describe('one rule for whether a Redis client is offline, in the Redis backend and in RedLock', () => {
  const server = privateRedisServer()

  it('node-redis: connected, online for both; closed, online for both (its own error refuses commands)', async () => {
    const client = await nodeRedisClient(server.url)
    expect(offline(client)).toEqual([false, false])
    await client.close()
    expect(offline(client)).toEqual([false, false])
    await expect(client.sendCommand(['PING'])).rejects.toThrow(/closed/i)
  })

  it('ioredis and node-redis: offline for both while the server is down, online again once it is back', async () => {
    const io = ioredisClient(server.url, { retryStrategy: () => 50 })
    const node = await nodeRedisClient(server.url, { socket: { reconnectStrategy: () => 50 } })
    try {
      await eventually('ioredis is ready', () => io.status === 'ready')
      expect([...offline(io), ...offline(node)]).toEqual([false, false, false, false])
      await server.stop()
      await eventually(
        'both clients know the server is gone',
        () => offline(io).every(Boolean) && offline(node).every(Boolean),
      )
      await server.start()
      await eventually('both clients reconnected', () => !offline(io).some(Boolean) && !offline(node).some(Boolean))
    } finally {
      io.disconnect()
      await node.close().catch(() => undefined)
    }
  }, 20_000)
})
