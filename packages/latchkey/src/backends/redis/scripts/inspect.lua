-- inspect: one lock family's holders and waiters as stored, for operators. Reads only (drops nothing), so the
-- raw records come back and the client leaves out the expired ones (redis-inspect.ts).
-- KEYS: the lock family's first six keys (base.lua). ARGV: none.
-- Reply: { now, PTTL of M, HGETALL M, HGETALL X (empty unless split), Q with scores, E with scores, W, HGETALL P }.

--#include base.lua

-- A listing inspects any key it found in the Redisson layout (a lock there is a plain hash): skip the others.
if redis.call('TYPE', M).ok ~= 'hash' and redis.call('EXISTS', M) == 1 then
  return { now, -2, {}, {}, {}, {}, {}, {} }
end
local x = {}
if SPLIT then x = redis.call('HGETALL', X) end
return {
  now,
  redis.call('PTTL', M),
  redis.call('HGETALL', M),
  x,
  redis.call('ZRANGE', Q, 0, -1, 'WITHSCORES'),
  redis.call('ZRANGE', E, 0, -1, 'WITHSCORES'),
  redis.call('ZRANGE', W, 0, -1),
  redis.call('HGETALL', P),
}
