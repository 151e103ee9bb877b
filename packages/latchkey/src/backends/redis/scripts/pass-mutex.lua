-- release of a mutex in the latchkey layout that was lately seen contended: drops the caller's lease and, when a
-- watcher waits, grants the lock to the oldest one in the same write (handoff-mutex.lua's grant), on its own: five
-- keys and three arguments where release.lua takes seven keys and four, and no TYPE, no DEL before the grant and no
-- second look at M. This script's round trip is the whole handoff gap when the next waiter is in the caller's process
-- (bench/redis-handoff.ts). Anything else (M a hash, a line or watching readers, a head that is not a live mutex
-- watcher) is left to release.lua: nothing is written before every check has passed.
-- KEYS: M, E, W, P, F (KEYS[1], KEYS[4] to KEYS[7] of base.lua). ARGV: the caller's field, the caller's wake channel
-- (`-`: none), the lock's channel.
-- Reply: 1 dropped (and granted to a watcher of another process, told on its wake channel, or nobody waited); 0
-- (nothing done) when `field` holds no valid lease; 2 (nothing done) when release.lua must run; or, when the lock went
-- to a watcher of the caller's own process, "g <field> <token>" (as release.lua).
--#include caller-string-lease.lua
if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
-- The two oldest: the second says whether the new holder's string is marked (grant-string-mutex.lua).
local heads = redis.call('ZRANGE', KEYS[3], 0, 1)
local head, more = heads[1], heads[2] ~= nil
if head == nil then
  redis.call('DEL', KEYS[1])
  return 1
end
local spec = redis.call('HGET', KEYS[4], head)
-- "kind ttlMs lockDelayMs permits mode waitTtlMs expiresAt wakeChannel" (base.lua, KEYS[6]).
local kind, ttl, hdelay, wexp, wake
if spec then kind, ttl, hdelay, wexp, wake = string.match(spec, '^(%a+) (%d+) (%d+) %d+ %S+ %d+ (%d+) (%S+)$') end
if kind ~= 'mutex' then return 2 end
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
if wexp + 0 <= now then return 2 end
local M, W, P, F, channel, mine = KEYS[1], KEYS[3], KEYS[4], KEYS[5], ARGV[3], ARGV[2]
-- From here on, the watcher's lock-delay (the caller's own was checked above).
local delay = hdelay
--#include grant-string-mutex.lua
