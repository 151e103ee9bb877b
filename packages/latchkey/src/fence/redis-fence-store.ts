import { adaptClient, isNoScript, type RedisClientLike } from '../backends/redis/client-adapter.js'
import { checkName, checkOptions } from '../core/validate.js'
import type { FenceStore } from './fence-guard.js'
import { ADMIT_SCRIPT } from './redis-admit-script.js'

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
    async admit(name, token) {
      const keys = [`${prefix}${name}`]
      const args = [token.toString()]
      const reply = await commander.evalsha(ADMIT_SCRIPT, keys, args).catch((error: unknown) => {
        if (isNoScript(error)) return commander.eval(ADMIT_SCRIPT, keys, args)
        throw error
      })
      const [admitted, highest] = reply as [number | string, string]
      return { admitted: Number(admitted) === 1, highest: BigInt(highest) }
    },
  }
}
