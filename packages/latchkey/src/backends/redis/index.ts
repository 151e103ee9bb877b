import type { Backend } from '../../backend/types.js'
import { checkOptions } from '../../core/validate.js'
import type { IoredisClientLike, NodeRedisClientLike, RedisClientLike } from './client-adapter.js'
import { latchkeyLayout, type RedisLayoutName, redissonLayout } from './key-layout.js'
import { crc16, keySlot } from './key-slot.js'
import { evalScript, type LuaScript, luaScript, readLuaFile } from './lua-script.js'
import { openRedisBackend } from './open-redis.js'
import { RedisBackend, WATCH_TTL_MS } from './redis-backend.js'
import type { RedisBackendOptions } from './redis-backend-options.js'

export {
  crc16,
  evalScript,
  type IoredisClientLike,
  keySlot,
  type LuaScript,
  latchkeyLayout,
  luaScript,
  type NodeRedisClientLike,
  openRedisBackend,
  RedisBackend,
  type RedisBackendOptions,
  type RedisClientLike,
  type RedisLayoutName,
  readLuaFile,
  redissonLayout,
  WATCH_TTL_MS,
}

/**
 * Locks in one Redis server (or one Cluster slot per lock): reentrant-by-core mutex, fair (FIFO) mutex,
 * read-write lock, semaphore; fencing tokens; lease timed by the server clock; waiters woken by one shared
 * subscriber connection, one waiter per release, oldest first across processes. A mutex or semaphore release
 * hands the lock straight to the oldest waiter and names it in the message, so it takes the lease without
 * another round trip. The price of that handoff: a waiter whose process died less than 5 s
 * ({@link WATCH_TTL_MS}) after its last try can still be handed the lock, which then stays taken until that
 * lease's TTL runs out, as if the process had died holding it. Takes an ioredis client or a connected node-redis client,
 * which it never closes; `close()` closes only the subscriber connection it opened itself.
 * `layout: 'redisson'` stores mutexes exactly as Redisson's RLock (hash `<name>`, field `<uuid>:<threadId>`,
 * channel `redisson_lock__channel:{<name>}`, message `0`), so Java services using Redisson and Node services
 * using latchkey exclude each other on the same names (the name is the namespaced lock name). Needs Redis >= 5.
 *
 * @example
 * const client = new Redis(process.env.REDIS_URL)          // ioredis, or: await createClient().connect()
 * const backend = redisBackend({ client })                 // layout 'latchkey', no WAIT, 5 s command timeout
 * const locks = createLocks({ backend, namespace: 'shop' })
 * await locks.mutex('order:42').withLock(async (lease) => pay(lease.token))
 * await locks.close(); await backend.close(); await client.quit()
 */
export function redisBackend(options: RedisBackendOptions): Backend {
  const o = checkOptions('options', options) as Partial<RedisBackendOptions>
  const client = o.client as Partial<IoredisClientLike & NodeRedisClientLike> | undefined
  if (typeof client !== 'object' || client === null) {
    throw new TypeError('latchkey: redisBackend needs options.client, an ioredis or a connected node-redis client')
  }
  if (o.layout !== undefined && o.layout !== 'latchkey' && o.layout !== 'redisson') {
    throw new RangeError(`latchkey: layout must be "latchkey" or "redisson", received ${String(o.layout)}`)
  }
  const wait = o.waitReplicas
  if (wait !== undefined) {
    if (
      !Number.isInteger(wait.replicas) ||
      wait.replicas < 0 ||
      !Number.isInteger(wait.timeoutMs) ||
      wait.timeoutMs < 0
    ) {
      throw new RangeError('latchkey: waitReplicas needs integer replicas >= 0 and timeoutMs >= 0')
    }
  }
  const fenceIdle = o.fenceIdleTtlMs
  if (fenceIdle !== undefined) {
    if (!Number.isSafeInteger(fenceIdle) || fenceIdle < 0) {
      throw new RangeError(`latchkey: fenceIdleTtlMs must be an integer >= 0 (0: never), received ${String(fenceIdle)}`)
    }
    if (o.layout === 'redisson') {
      throw new RangeError(
        "latchkey: fenceIdleTtlMs cannot be set with layout 'redisson': Redisson's RFencedLock shares the counter redisson_lock_token:{name} and would restart an expired one at 1",
      )
    }
  }
  for (const key of ['commandTimeoutMs', 'subscriberLingerMs'] as const) {
    const v = o[key]
    if (v !== undefined && (!Number.isFinite(v) || v < 0)) {
      throw new RangeError(`latchkey: ${key} must be a finite number >= 0, received ${String(v)}`)
    }
  }
  return new RedisBackend(options)
}

// RedLock lives beside the single-node backend in `latchkey/redis`, as API.md lists it.
export {
  openRedlockBackend,
  parseRedlockUrl,
  REDLOCK_KEY_PREFIX,
  type RedlockBackendOptions,
  type RedlockClientLike,
  redlockBackend,
} from '../redlock/index.js'
