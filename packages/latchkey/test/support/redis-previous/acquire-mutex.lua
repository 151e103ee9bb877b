-- acquire-mutex.lua as latchkey sent it at commit c5ed1bb, before it answered an integer (free-mutex.lua expanded):
-- a process of that version, for the rolling-upgrade test (test/redis-rolling-upgrade.test.ts). Do not edit.
-- tryAcquire of a mutex in the latchkey layout, first try of an attempt (nothing of it registered), on its own: only
-- the two keys and three arguments the free lock needs, where acquire.lua takes seven keys and a packed spec (each
-- key and argument costs the client and the server more than the commands below do; bench/redis-uncontended.ts).
-- A held lock is left to acquire.lua, which registers the wait: the backend sends this script only while the lock
-- has not been seen contended in its process lately.
-- KEYS: M and F (KEYS[1] and KEYS[7] of base.lua). ARGV: the caller's field, ttlMs, lockDelayMs.
-- Reply as acquire.lua's: '1 <token>' granted, '0 -1' held (nothing was written).
local M, F, field, ttl, delay = KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- A free mutex of the latchkey layout granted: when M does not exist (no holder, no lock-delay left), the token of
-- next_fence, the record of put and the expiry of keep_until in five commands (four without the counter's idle
-- expiry), as the general rules of acquire.lua would grant it. Expects the locals M, F (KEYS[1] and KEYS[7] of
-- base.lua), field, ttl and delay (numbers). Included before any function is created (each closure costs Redis per
-- call) by acquire.lua and acquire-mutex.lua; replies as acquire.lua does.
if redis.call('EXISTS', M) == 0 then
  local T = redis.call('TIME')
  local n = redis.call('INCR', F)
  if n == 1 then
    n = tonumber(T[1]) * 1000000 + tonumber(T[2])
    redis.call('SET', F, string.format('%d', n))
  end
  if FENCE_IDLE_MS > 0 then redis.call('PEXPIRE', F, FENCE_IDLE_MS) end
  local exp = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000) + ttl
  redis.call('HSET', M, field, string.format('mutex|%d|%d|%d', exp, exp + delay, n))
  redis.call('PEXPIRE', M, ttl + delay)
  return '1 ' .. string.format('%d', n)
end
return '0 -1'
