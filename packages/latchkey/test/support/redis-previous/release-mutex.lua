-- release-mutex.lua as latchkey sent it at commit 117a11b, the last with every holder a field of the hash M (its included
-- parts expanded): a process of that version, for the rolling-upgrade test (test/redis-rolling-upgrade.test.ts).
-- Do not edit.
-- release of a mutex in the latchkey layout when nobody waits, on its own: three keys and one argument where
-- release.lua takes seven keys and three arguments. When someone waits it does nothing and says so, and the backend
-- runs release.lua, which hands the lock over (the backend sends this script only while the lock has not been seen
-- contended in its process lately).
-- KEYS: M, E and W (KEYS[1], KEYS[4] and KEYS[5] of base.lua). ARGV: the caller's field.
-- Reply: 1 dropped; 0 (nothing done) when `field` holds no valid lease; 2 (nothing done) when someone waits.
local rec = redis.call('HGET', KEYS[1], ARGV[1])
if not rec then return 0 end
local T = redis.call('TIME')
local exp = string.match(rec, '^%a+|(%d+)|')
-- Strings coerce in arithmetic (tonumber would be one more call each); `+ 0` makes the comparison numeric.
if exp == nil or exp + 0 <= T[1] * 1000 + math.floor(T[2] / 1000) then return 0 end
if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then return 2 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
