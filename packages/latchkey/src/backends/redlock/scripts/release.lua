-- Compare-and-delete: a plain DEL could delete the key of the next owner after ours expired.
-- KEYS: the lock's key, its line of waiters and their expiries (see acquire.lua).
-- ARGV[1]: owner; ARGV[2] (optional): the lock's channel; ARGV[3]: 'h' (a release: leave the line, then hand the
-- key to the first waiter in line whose place has not expired, or delete it), 't' (a release that hands the key to
-- ARGV[4], a waiter of the releasing process, for ARGV[5] ms, whatever the line) or 'u' (a failed round's undo:
-- delete only, keep our place in line). With 't', ARGV[6..8] may place the waiter behind ARGV[4] in that process
-- in line (owner, ticket, how long its place lasts; its lease is ARGV[5] too), as its own round would (acquire.lua),
-- so that it need not make one.
-- Messages on the channel (redlock-notifier.ts): "<owner>" released here, nobody in line; "<owner> <next>" released
-- and handed to <next> here (not for 't': the releasing process knows from the replies, and no other process acts
-- on it); "~<owner>" an undo deleted <owner>'s key here (a grant handed to it earlier is gone).
-- Reply: 1 ours (deleted or handed on), 0 not ours.
local handoff = ARGV[3] ~= 'u'
if handoff then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
end
if ARGV[3] == 't' and ARGV[6] then
  local place_owner, place_ticket, place_ttl, place_ms = ARGV[6], ARGV[7], ARGV[5], ARGV[8]
--#include take-place.lua
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if not ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
if not handoff then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], '~' .. ARGV[1])
  return 1
end
if ARGV[3] == 't' then
  redis.call('ZREM', KEYS[2], ARGV[4])
  redis.call('HDEL', KEYS[3], ARGV[4])
  redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while true do
  local first = redis.call('ZRANGE', KEYS[2], 0, 0)
  local next = first[1]
  if not next then break end
  redis.call('ZREM', KEYS[2], next)
  local entry = redis.call('HGET', KEYS[3], next)
  redis.call('HDEL', KEYS[3], next)
  if entry then
    local expires, ttl = string.match(entry, '^(%d+) (%d+)$')
    if tonumber(expires) > now then
      redis.call('SET', KEYS[1], next, 'PX', ttl)
      redis.call('PUBLISH', ARGV[2], ARGV[1] .. ' ' .. next)
      return 1
    end
  end
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[1])
return 1
