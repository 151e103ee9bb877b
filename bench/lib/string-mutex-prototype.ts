/**
 * A measurement, not a product: latchkey's core on its Redis backend with the uncontended mutex kept as a STRING key
 * (`SET NX PX` of "field|mutex|exp|delayUntil|token") instead of a field of the holders hash, so the short acquire
 * needs four commands instead of six. Same features as the shipped short scripts (fencing token from the counter
 * with its idle expiry, server-timed lease checked on release, a release that leaves a waited-for lock to the
 * full script), same core. It is not shippable as is: the full scripts (waits, handoffs, renewals, inspection) and
 * every process of an earlier version read that key as a hash and would fail with WRONGTYPE, so a rolling upgrade
 * would break; it exists to show in bench/redis-uncontended.ts (PROTO=1) what the layout change alone would buy.
 * Held locks are not handled (the bench's keys are uncontended): a held lock answers "not acquired".
 */
import type { Redis } from 'ioredis'
import type { AcquireRequest, Backend, HolderRef } from 'latchkey'

const TAKE = `local T = redis.call('TIME')
local n = redis.call('INCR', KEYS[2])
if n == 1 then
  n = tonumber(T[1]) * 1000000 + tonumber(T[2])
  redis.call('SET', KEYS[2], string.format('%d', n))
end
redis.call('PEXPIRE', KEYS[2], 86400000)
local exp = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000) + tonumber(ARGV[2])
if redis.call('SET', KEYS[1], string.format('%s|mutex|%d|%d|%d', ARGV[1], exp, exp, n), 'NX', 'PX', ARGV[2]) then
  return n
end
return 0`

const GIVE = `local rec = redis.call('GET', KEYS[1])
if not rec then return 0 end
local f, exp = string.match(rec, '^([^|]*)|%a+|(%d+)|')
if f ~= ARGV[1] then return 0 end
local T = redis.call('TIME')
if tonumber(exp) <= tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000) then return 0 end
if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then return 2 end
redis.call('DEL', KEYS[1])
return 1`

type Scripted = Redis & {
  lkTake(m: string, fence: string, field: string, ttl: string): Promise<number>
  lkGive(m: string, expiry: string, watchers: string, field: string): Promise<number>
}

/** `real` (a latchkey Redis backend on `client`) with its mutex tryAcquire and release replaced as above. */
export function stringMutexPrototype(real: Backend, client: Redis): Backend {
  const c = client as Scripted
  c.defineCommand('lkTake', { numberOfKeys: 2, lua: TAKE })
  c.defineCommand('lkGive', { numberOfKeys: 3, lua: GIVE })
  const key = (name: string) => `latchkey-proto:{${name}}`
  return Object.create(real, {
    tryAcquire: {
      value: async (r: AcquireRequest) => {
        const m = key(r.key)
        const n = await c.lkTake(m, `${m}:fence`, r.owner, String(r.ttlMs))
        return n === 0 ? { acquired: false } : { acquired: true, token: BigInt(n) }
      },
    },
    release: {
      value: async (r: HolderRef) => {
        const m = key(r.key)
        return (await c.lkGive(m, `${m}:expiry`, `${m}:watchers`, r.owner)) === 1
      },
    },
  }) as Backend
}
