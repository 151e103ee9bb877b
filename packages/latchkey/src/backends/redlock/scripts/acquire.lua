-- SET NX PX on one RedLock node, idempotent per owner: a key already holding our value is refreshed, so a retry
-- by the same owner (the core reuses the owner across attempts) never reports its own leftover as "held by
-- another". KEYS[1]: the lock's key. ARGV: owner, ttlMs.
-- Reply: {1} when this node grants the lock, {0, pttl, holder} when another owner holds it.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1}
end
if v then return {0, redis.call('PTTL', KEYS[1]), v} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1}
