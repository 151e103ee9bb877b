-- The next fencing token of the counter F, as the local `n`; inline, so that the short paths including it
-- (free-mutex.lua, handoff-mutex.lua) create no function (each closure costs Redis per call); grant.lua's
-- next_fence wraps it. Expects the locals F (KEYS[7] of base.lua) and T (the script's TIME, or nil: then the rare
-- restart below reads the clock itself).
-- A missing counter (new, expired after FENCE_IDLE_MS without a token, or lost in a restart without
-- persistence) restarts at the server clock in microseconds. Why that is above every token issued before:
-- the counter only ever moves by one INCR per script run (no script takes a token twice), and Redis
-- runs scripts one at a time, each well over a microsecond (7-8 µs of server time per call on average in
-- INFO commandstats here), so a counter that started at the clock, or at 1, never gets ahead of the clock
-- in µs: each value is at most the clock at the moment it was issued. It vanishes only FENCE_IDLE_MS after
-- its last INCR, so the restart reads a clock FENCE_IDLE_MS * 1000 µs past the moment of the last token,
-- and is higher with that much to spare (which also absorbs a server clock stepped back by less than
-- FENCE_IDLE_MS). Every run refreshes the expiry, so a busy lock's counter never restarts, except the runs of the
-- short acquire's FENCE_REFRESH = false build (acquire-mutex.lua), which a process sends only while it sent a
-- refreshing run on the same lock less than FENCE_IDLE_MS / 8 before (redis-backend.ts, fenceRefreshedAt). That
-- run set the expiry FENCE_IDLE_MS after it executed, later refreshes and restarts only move it later (each
-- PEXPIRE counts from its own, later, moment), and an operator's DEL only restarts the counter here, which
-- refreshes. So when any run takes a token the counter still has at least FENCE_IDLE_MS * 7/8, less the time
-- that run's command spent between its client and the server and up to 1 ms (Redis keeps expiry times in whole
-- milliseconds), to live: a restart still comes that long after
-- the last token, and the argument above holds with that margin instead of the whole FENCE_IDLE_MS.
-- A restart sets the value and the expiry in one SET: a lock per order restarts its counter on every first grant.
local n = redis.call('INCR', F)
if n == 1 then
  local C = T or redis.call('TIME')
  n = tonumber(C[1]) * 1000000 + tonumber(C[2])
  if FENCE_IDLE_MS > 0 then
    redis.call('SET', F, string.format('%d', n), 'PX', FENCE_IDLE_MS)
  else
    redis.call('SET', F, string.format('%d', n))
  end
elseif FENCE_IDLE_MS > 0 and FENCE_REFRESH then
  redis.call('PEXPIRE', F, FENCE_IDLE_MS)
end
