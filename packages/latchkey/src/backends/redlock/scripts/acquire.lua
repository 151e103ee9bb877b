-- SET NX PX on one RedLock node, idempotent per owner: a key already holding our value is refreshed, so a retry
-- by the same owner (the core reuses the owner across attempts) never reports its own leftover, nor a grant a
-- release handed it (release.lua), as "held by another".
-- KEYS: the lock's key, its line of waiters (zset owner -> ticket), their expiries (hash owner -> "expiresAtMs ttlMs").
-- ARGV: owner, ttlMs, and for a waiting process's head: its ticket (the same on every node, so that every node
-- orders the line alike) and how long its place in line lasts unless a later try renews it.
-- Reply: {1} granted here now, {2} already ours (refreshed), {0, pttl, holder} held by another owner.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
  return {2}
end
if v then
  if ARGV[3] then
    local place_owner, place_ticket, place_ttl, place_ms = ARGV[1], ARGV[3], ARGV[2], ARGV[4]
--#include take-place.lua
  end
  return {0, redis.call('PTTL', KEYS[1]), v}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return {1}
