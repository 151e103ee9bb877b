-- forceRelease: drops every holder and waiter (Redisson's forceUnlock) and wakes every waiter.
-- KEYS: the lock family's first six keys (base.lua). ARGV: channel, alwaysPublish (0/1).
-- Reply: 1 when anything was held, else 0.

--#include base.lua
--#include holders.lua

local holders = live_holders()
local held = #holders > 0 or foreign(0) ~= nil
redis.call('DEL', M, X, Q, E, W, P)
if ARGV[2] == '1' then
  redis.call('PUBLISH', ARGV[1], '0')
else
  redis.call('PUBLISH', ARGV[1], '*')
end
if held then return 1 end
return 0
