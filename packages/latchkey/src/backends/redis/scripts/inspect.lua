-- inspect: one lock family's holders and waiters as stored, for operators. Reads only (drops nothing), so the
-- raw records come back and the client leaves out the expired ones (redis-inspect.ts).
-- KEYS: the lock family's first six keys (base.lua). ARGV: none.
-- Reply: { now, PTTL of M, HGETALL M, HGETALL X (empty unless split), Q with scores, E with scores, W, HGETALL P }.

--#include base.lua

-- A listing inspects any key it found in the Redisson layout (a lock there is a plain hash): skip the others.
if SPLIT and redis.call('TYPE', M).ok ~= 'hash' and redis.call('EXISTS', M) == 1 then
  return { now, -2, {}, {}, {}, {}, {}, {} }
end
local x = {}
if SPLIT then x = redis.call('HGETALL', X) end
-- A mutex holder kept as the string M (latchkey layout) comes back as the hash record it stands for.
local m
if STR then
  local f, _, exp, dly, tok = string_holder()
  m = { f, 'mutex|' .. fmt(exp) .. '|' .. fmt(dly) .. '|' .. tok }
else
  m = redis.call('HGETALL', M)
end
return {
  now,
  redis.call('PTTL', M),
  m,
  x,
  redis.call('ZRANGE', Q, 0, -1, 'WITHSCORES'),
  redis.call('ZRANGE', E, 0, -1, 'WITHSCORES'),
  redis.call('ZRANGE', W, 0, -1),
  redis.call('HGETALL', P),
}
