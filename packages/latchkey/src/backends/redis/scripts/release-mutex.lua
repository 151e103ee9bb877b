-- release of a mutex in the latchkey layout when nobody waits, on its own: three keys and one argument where
-- release.lua takes seven keys and three arguments. When someone waits it does nothing and says so, and the backend
-- runs release.lua, which hands the lock over (the backend sends this script only while the lock has not been seen
-- contended in its process lately).
-- KEYS: M, E and W (KEYS[1], KEYS[4] and KEYS[5] of base.lua). ARGV: the caller's field.
-- Reply: 1 dropped; 0 (nothing done) when `field` holds no valid lease; 2 (nothing done) when someone waits, or when
-- M is a hash (a mutex a previous version's release handed to the caller, or other kinds' holders): release.lua
-- reads those.
-- The holder is the string M (free-mutex.lua): no TIME, its lease is valid while M exists and, with a lock-delay,
-- has more than lockDelayMs left. pcall: GET on a hash is a WRONGTYPE error reply, which here only means "not the
-- string"; a TYPE first would cost every release one more call.
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then
  if v then return 2 end
  return 0
end
local delay, f = string.match(v, '^%d+|(%d+)|(.*)$')
if f ~= ARGV[1] then return 0 end
-- `+ 0` makes the comparison numeric (strings coerce in arithmetic; tonumber would be one more call).
if delay ~= '0' and redis.call('PTTL', KEYS[1]) <= delay + 0 then return 0 end
if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then return 2 end
redis.call('DEL', KEYS[1])
return 1
