-- The opening of the short releases of a mutex in the latchkey layout (release-mutex.lua, pass-mutex.lua): returns
-- from the script unless the caller holds a valid lease as the string M. Expects KEYS[1] = M and ARGV[1] = the
-- caller's field. Returns 0 (nothing done) when `field` holds no valid lease, 2 (nothing done: release.lua reads it)
-- when M is a hash (a mutex a previous version's release handed to the caller, or other kinds' holders). Leaves the
-- local `waited`: 'w' when M carries the mark of a registered waiter (base.lua, KEYS[1]), else ''.
-- The holder is the string M (free-mutex.lua): no TIME, its lease is valid while M exists and, with a lock-delay,
-- has more than lockDelayMs left. pcall: GET on a hash is a WRONGTYPE error reply, which here only means "not the
-- string"; a TYPE first would cost every release one more call.
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then
  if v then return 2 end
  return 0
end
local waited, delay, f = string.match(v, '^(w?)%d+|(%d+)|(.*)$')
if f ~= ARGV[1] then return 0 end
-- Its lease ends lockDelayMs before the key expires (free-mutex.lua). `+ 0` makes the comparison numeric (strings
-- coerce in arithmetic; tonumber would be one more call).
if delay ~= '0' and redis.call('PTTL', KEYS[1]) <= delay + 0 then return 0 end
