-- release: drops a holder whose lease is still valid and, when someone waits, hands the lock to the oldest
-- watcher or publishes the release.
-- KEYS: the lock family's seven keys (base.lua). ARGV: field, channel, alwaysPublish (0/1), the caller's wake
-- channel (`-`: none), and optionally the token the lease must have (an orphaned grant is given back only if it
-- was not granted again since).
-- Reply: 1; 0 (no effect) when `field` holds no valid lease; or, when the lock went to a watcher of the caller's
-- own process, "g <field> <token>", the grant that handoff would otherwise have published to that process.

-- The latchkey layout's common cases, before the shared functions below are created: drops the caller's valid
-- lease (as valid_record and drop do: the string M of a mutex, or the caller's field of the hash) and is done
-- unless someone waits; a mutex's oldest watcher is then granted the lock by handoff-mutex.lua when nothing else
-- stands in the way.
local dropped = false
if KEYS[2] == KEYS[1] then
  local t = redis.call('TYPE', KEYS[1]).ok
  if t == 'none' then return 0 end
  local T = redis.call('TIME')
  local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
  if t == 'string' then
    local tok, delay, f = string.match(redis.call('GET', KEYS[1]), '^w?(%d+)|(%d+)|(.*)$')
    if f ~= ARGV[1] or (ARGV[5] ~= nil and ARGV[5] ~= tok) then return 0 end
    -- Its lease ends lockDelayMs before the key expires (free-mutex.lua).
    if delay ~= '0' and redis.call('PTTL', KEYS[1]) <= tonumber(delay) then return 0 end
    redis.call('DEL', KEYS[1])
  else
    local rec = redis.call('HGET', KEYS[1], ARGV[1])
    if not rec then return 0 end
    local exp, tok = string.match(rec, '^%a+|(%d+)|%d+|(%d+)|?%d*$')
    if exp == nil or tonumber(exp) <= now or (ARGV[5] ~= nil and ARGV[5] ~= tok) then return 0 end
    redis.call('HDEL', KEYS[1], ARGV[1])
  end
  if ARGV[3] ~= '1' then
--#include handoff-mutex.lua
  end
  dropped = true
end

--#include base.lua
--#include holders.lua
--#include grant.lua
--#include handoff.lua

if not dropped then
  local kind, _, _, tok = valid_record(ARGV[1])
  if kind == nil or (ARGV[5] ~= nil and ARGV[5] ~= tok) then return 0 end
  drop(ARGV[1])
end
return handoff(ARGV[2], ARGV[3] == '1', ARGV[4]) or 1
