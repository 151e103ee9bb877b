-- leaveQueue: gives up a place in line or a watch and wakes the new head (the one leaving may have been woken
-- and not have retried). A grant a release made to this watcher that it never took is passed on.
-- KEYS: the lock family's seven keys (base.lua). ARGV: field, channel, alwaysPublish (0/1).
-- Reply: how many registrations were removed (1 when a grant was passed on).

--#include base.lua
--#include holders.lua
--#include grant.lua
--#include handoff.lua

if valid_record(ARGV[1]) ~= nil then
  drop(ARGV[1])
  handoff(ARGV[2], ARGV[3] == '1')
  return 1
end
local removed = redis.call('ZREM', Q, ARGV[1]) + redis.call('ZREM', W, ARGV[1])
redis.call('ZREM', E, ARGV[1])
redis.call('HDEL', P, ARGV[1])
if removed > 0 then notify(ARGV[2], ARGV[3] == '1') end
return removed
