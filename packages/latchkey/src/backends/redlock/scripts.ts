/**
 * The per-node Lua scripts of RedLock. Each runs on one independent master and touches one key; the owner and
 * the TTL always travel as ARGV, never inside the source. Run with EVALSHA, falling back to EVAL on NOSCRIPT
 * (a restarted node has an empty script cache).
 */
import { createHash } from 'node:crypto'

/** A Lua script with its SHA1, for EVALSHA. */
export interface RedlockScript {
  readonly name: string
  readonly source: string
  readonly sha: string
}

function script(name: string, source: string): RedlockScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') }
}

/**
 * SET NX PX, idempotent per owner: a key already holding our value is refreshed, so a retry by the same owner
 * (the core reuses the owner across attempts) never reports its own leftover as "held by another".
 * Returns `{1}` when this node grants the lock, `{0, pttl, holder}` when another owner holds it.
 */
export const ACQUIRE = script(
  'acquire',
  `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1}
end
if v then return {0, redis.call('PTTL', KEYS[1]), v} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1}`,
)

/** PEXPIRE only when the key still holds our value. 1 renewed, 0 not ours (expired or taken). */
export const RENEW = script(
  'renew',
  `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`,
)

/** Compare-and-delete (note 002's release script). 1 deleted, 0 not ours. */
export const RELEASE = script(
  'release',
  `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`,
)

/** 1 when the key exists on this node. */
export const EXISTS = script('exists', `return redis.call('EXISTS', KEYS[1])`)

/** Unconditional DEL (administrative force release). 1 when something was deleted. */
export const FORCE_DELETE = script('force-delete', `return redis.call('DEL', KEYS[1])`)
