-- acquire-mutex.lua as latchkey sent it at commit 117a11b, the last with every holder a field of the hash M (its included
-- parts expanded): a process of that version, for the rolling-upgrade test (test/redis-rolling-upgrade.test.ts).
-- Do not edit.
-- tryAcquire of a mutex in the latchkey layout, first try of an attempt (nothing of it registered), on its own: only
-- the two keys and two or three arguments the free lock needs, where acquire.lua takes seven keys and a packed spec
-- (each key and argument costs the client and the server more than the commands below do;
-- bench/redis-uncontended.ts). A held lock is left to acquire.lua, which registers the wait: the backend sends this
-- script only while the lock has not been seen contended in its process lately.
-- KEYS: M and F (KEYS[1] and KEYS[7] of base.lua). ARGV: the caller's field, ttlMs, and lockDelayMs when not 0.
-- Reply: the token (an integer reply, cheaper for both sides than acquire.lua's string) when granted, else 0
-- (held; nothing was written).
-- ttl and delay stay strings: free-mutex.lua only does arithmetic with them, which coerces.
local M, F, field, ttl, delay = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3] or 0
local granted = 0
-- A free mutex of the latchkey layout granted: when M does not exist (no holder, no lock-delay left), the token of
-- next_fence, the record of put and the expiry of keep_until in five commands (four without the counter's idle
-- expiry), as the general rules of acquire.lua would grant it. Expects the locals M, F (KEYS[1] and KEYS[7] of
-- base.lua), field, ttl and delay (numbers, or strings of digits: only arithmetic uses them). Included before any function is created (each closure costs Redis per
-- call) by acquire.lua and acquire-mutex.lua, which declare `local granted` before it: set to the token on a grant,
-- each includer replies in its own form.
if redis.call('EXISTS', M) == 0 then
  local T = redis.call('TIME')
-- The next fencing token of the counter F, as the local `n`; inline, so that the short paths including it
-- (free-mutex.lua, handoff-mutex.lua) create no function (each closure costs Redis per call); grant.lua's
-- next_fence wraps it. Expects the locals F (KEYS[7] of base.lua) and T (the script's TIME).
-- A missing counter (new, expired after FENCE_IDLE_MS without a token, or lost in a restart without
-- persistence) restarts at the server clock in microseconds. Why that is above every token issued before:
-- the counter only ever moves by one INCR per script run (no script takes a token twice), and Redis
-- runs scripts one at a time, each well over a microsecond (7-8 µs of server time per call on average in
-- INFO commandstats here), so a counter that started at the clock, or at 1, never gets ahead of the clock
-- in µs: each value is at most the clock at the moment it was issued. It vanishes only FENCE_IDLE_MS after
-- its last INCR, so the restart reads a clock FENCE_IDLE_MS * 1000 µs past the moment of the last token,
-- and is higher with that much to spare (which also absorbs a server clock stepped back by less than
-- FENCE_IDLE_MS). Every grant refreshes the expiry, so a busy lock's counter never restarts.
local n = redis.call('INCR', F)
if n == 1 then
  n = tonumber(T[1]) * 1000000 + tonumber(T[2])
  redis.call('SET', F, string.format('%d', n))
end
if FENCE_IDLE_MS > 0 then redis.call('PEXPIRE', F, FENCE_IDLE_MS) end
  -- T's strings coerce in arithmetic: tonumber would be one more call each.
  local exp = T[1] * 1000 + math.floor(T[2] / 1000) + ttl
  redis.call('HSET', M, field, string.format('mutex|%d|%d|%d', exp, exp + delay, n))
  redis.call('PEXPIRE', M, ttl + delay)
  granted = n
end
return granted
