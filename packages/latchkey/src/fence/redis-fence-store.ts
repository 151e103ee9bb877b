import { adaptClient, type RedisClientLike } from '../backends/redis/client-adapter.js'
import { luaScript, readLuaFile, runScript } from '../backends/redis/lua-script.js'
import { checkName, checkOptions } from '../core/validate.js'
import type { FenceStore } from './fence-guard.js'

/** redis-admit.lua: whether the token was admitted, and the highest token admitted for the name since. */
const ADMIT = luaScript('fence admit', readLuaFile(new URL('./redis-admit.lua', import.meta.url)), (raw) => {
  const [admitted, highest] = raw as [number | string, string]
  return { admitted: Number(admitted) === 1, highest: BigInt(highest) }
})

/** Options of {@link redisFenceStore}. */
export interface RedisFenceStoreOptions {
  /** An ioredis client or a connected node-redis client (as `redisBackend` takes). Never closed by the store. */
  client: RedisClientLike
  /** Prepended to each name to make its key. Default `latchkey-fence:`. */
  prefix?: string
}

/**
 * A fence store in Redis: one string key per name (`<prefix><name>`) holding the highest token admitted,
 * compared and written by one Lua script. The keys never expire: an expired one would admit a stale token.
 *
 * @example
 * const guard = createFenceGuard(redisFenceStore({ client: new Redis() }))
 * await guard.admit('account:7', lease.token) // StaleTokenError when a later holder already wrote
 */
export function redisFenceStore(options: RedisFenceStoreOptions): FenceStore {
  const o = checkOptions('options', options)
  const prefix = o.prefix === undefined ? 'latchkey-fence:' : checkName('prefix', o.prefix, true)
  const clientError = () =>
    new TypeError(
      `latchkey: redisFenceStore needs options.client, an ioredis or a connected node-redis client, received ${typeof o.client}`,
    )
  if (typeof o.client !== 'object' || o.client === null) throw clientError()
  let commander: ReturnType<typeof adaptClient>
  try {
    commander = adaptClient(o.client as RedisClientLike)
  } catch {
    throw clientError()
  }
  return {
    admit: (name, token) => runScript(commander, ADMIT, [`${prefix}${name}`], [token.toString()]),
  }
}
