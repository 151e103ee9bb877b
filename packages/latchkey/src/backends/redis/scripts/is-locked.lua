-- isLocked: whether any holder occupies the lock (a semaphore: all its permits).
-- KEYS: the lock family's first six keys (base.lua; not the fencing counter). ARGV: kind, permits. Reply: 1 or 0.

--#include base.lua
--#include holders.lua

local holders = live_holders()
if ARGV[1] == 'semaphore' then
  if #holders >= tonumber(ARGV[2]) then return 1 end
  return 0
end
if #holders > 0 or foreign(0) ~= nil then return 1 end
return 0
