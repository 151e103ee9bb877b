-- Places a waiting owner in the line of a lock (as acquire.lua does for a waiting head that finds the lock held),
-- without ever taking the lock: the waiter that is next in its process while another of its process holds the lock.
-- KEYS: the lock's key (unused), its line (zset owner -> ticket), their expiries (hash owner -> "expiresAtMs ttlMs").
-- ARGV: owner, ttlMs, ticket (the same on every node), how long the place lasts unless a round renews it.
-- Reply: 1.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], (now + tonumber(ARGV[4])) .. ' ' .. ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1
