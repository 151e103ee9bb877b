-- What a grant needs beyond the holders: the line's expired members, the permit count in force, the next
-- fencing token. Included after holders.lua by acquire, release and leave-queue.

local function prune_line()
  local gone = redis.call('ZRANGEBYSCORE', E, '-inf', now)
  if #gone == 0 then return end
  for i = 1, #gone do redis.call('ZREM', Q, gone[i]) end
  redis.call('ZREMRANGEBYSCORE', E, '-inf', now)
end

-- The permits another semaphore holder recorded, when they differ from per (else nil): the count in force.
local function permits_in_force(holders, per)
  for _, h in ipairs(holders) do
    if h.per ~= '' and tonumber(h.per) ~= tonumber(per) then return h.per end
  end
  return nil
end

-- The next fencing token (next-fence.lua says why a restarted counter stays above every earlier one).
local function next_fence()
--#include next-fence.lua
  return n
end
