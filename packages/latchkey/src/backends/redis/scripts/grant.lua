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

-- A missing counter (new, expired after FENCE_IDLE_MS without a token, or lost in a restart without
-- persistence) restarts at the server clock in microseconds. Why that is above every token issued before:
-- the counter only ever moves by one INCR per script run (no script calls next_fence twice), and Redis
-- runs scripts one at a time, each well over a microsecond (7-8 µs of server time per call on average in
-- INFO commandstats here), so a counter that started at the clock, or at 1, never gets ahead of the clock
-- in µs: each value is at most the clock at the moment it was issued. It vanishes only FENCE_IDLE_MS after
-- its last INCR, so the restart reads a clock FENCE_IDLE_MS * 1000 µs past the moment of the last token,
-- and is higher with that much to spare (which also absorbs a server clock stepped back by less than
-- FENCE_IDLE_MS). Every grant refreshes the expiry, so a busy lock's counter never restarts.
local function next_fence()
  local n = redis.call('INCR', F)
  if n == 1 then
    n = tonumber(T[1]) * 1000000 + tonumber(T[2])
    redis.call('SET', F, fmt(n))
  end
  if FENCE_IDLE_MS > 0 then redis.call('PEXPIRE', F, FENCE_IDLE_MS) end
  return n
end
