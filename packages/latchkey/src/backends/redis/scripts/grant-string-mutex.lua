-- The grant of a released mutex of the latchkey layout to its oldest watcher, `head`, in one write, and the word
-- to it: shared by release.lua's short path (handoff-mutex.lua) and the contended short release (pass-mutex.lua),
-- after every check has passed. Returns from the script: "g <head> <token>" when `head` waits in the caller's own
-- process (the caller hands it over from the reply), else 1 after publishing the grant on the watcher's channel.
-- Expects the locals M, W, P, F (base.lua's KEYS[1], KEYS[5], KEYS[6], KEYS[7]), T (the script's TIME), now (server
-- ms), head and its spec's ttl, delay and wake, channel (the lock's), mine (the caller's wake channel) and `more`:
-- whether W holds another watcher after head (E is empty: both includers checked), which the new holder's string
-- is marked with (base.lua, KEYS[1]) so that its release hands over again.
--#include next-fence.lua
local token = string.format('%d', n)
redis.call('ZREM', W, head)
redis.call('HDEL', P, head)
if string.sub(wake, 1, 16) == 'latchkey:wake:s:' then
  -- The string M of free-mutex.lua; it replaces the caller's string, if any: the drop and the grant in one write.
  local w = ''
  if more then w = 'w' end
  redis.call('SET', M, w .. token .. '|' .. delay .. '|' .. head, 'PX', ttl + delay)
else
  -- A watcher of an earlier build (its wake channel has no `:s:`) reads only the hash (free-mutex.lua).
  local exp = now + ttl
  redis.call('DEL', M)
  redis.call('HSET', M, head, string.format('mutex|%d|%d|%s', exp, exp + delay, token))
  redis.call('PEXPIRE', M, ttl + delay)
end
if wake == '-' then wake = channel end
if wake == mine then return 'g ' .. head .. ' ' .. token end
redis.call('PUBLISH', wake, 'g ' .. head .. ' ' .. token)
return 1
