-- A free mutex of the latchkey layout granted: when M does not exist (no holder, no lock-delay left), the token of
-- next_fence, the record of put and the expiry of keep_until in five commands (four without the counter's idle
-- expiry), as the general rules of acquire.lua would grant it. Expects the locals M, F (KEYS[1] and KEYS[7] of
-- base.lua), field, ttl and delay (numbers, or strings of digits: only arithmetic uses them). Included before any function is created (each closure costs Redis per
-- call) by acquire.lua and acquire-mutex.lua, which declare `local granted` before it: set to the token on a grant,
-- each includer replies in its own form.
if redis.call('EXISTS', M) == 0 then
  local T = redis.call('TIME')
--#include next-fence.lua
  -- T's strings coerce in arithmetic: tonumber would be one more call each.
  local exp = T[1] * 1000 + math.floor(T[2] / 1000) + ttl
  redis.call('HSET', M, field, string.format('mutex|%d|%d|%d', exp, exp + delay, n))
  redis.call('PEXPIRE', M, ttl + delay)
  granted = n
end
