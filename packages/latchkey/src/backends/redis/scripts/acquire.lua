-- tryAcquire: the grant rules of grant-rules.ts `decideGrant` in one script.
-- KEYS: the lock family's seven keys (base.lua). ARGV[1]: the caller's field. ARGV[2]: its spec,
-- "kind ttlMs lockDelayMs permits mode waitTtlMs", packed in one argument because each argument costs the client
-- more than string.match costs Redis; mode is `q` (keep a place in line), `w` (watch: a waiter of this process
-- is subscribed), `f` (as `w`, on the attempt's first try: nothing of it is registered yet, so a grant has
-- nothing to clean up) or `-`. ARGV[3], a watcher only: its process's wake channel (see handoff in handoff.lua).
-- Reply, always one string "code value [remainingMs]" (a bulk string costs the client less than an array):
--   '1 <token>'               granted
--   '1 <token> <remainingMs>' granted earlier, by a release handing the lock to this watcher (handoff), with
--                             remainingMs of its lease left
--   '2 <permitsInForce>'      a semaphore's holders use another permit count; nothing of the caller is kept
--   '0 <retryAfterMs>'        not granted (-1: unknown when it frees)
local field = ARGV[1]
local kind, ttl, delay, permits, mode, wait_ttl = string.match(ARGV[2], '^(%a+) (%d+) (%d+) (%d+) ([qwf-]) (%d+)$')
if kind == nil then return redis.error_reply('latchkey: bad acquire arguments') end
ttl, delay, permits, wait_ttl = tonumber(ttl), tonumber(delay), tonumber(permits), tonumber(wait_ttl)

-- The uncontended case first, before the shared functions below are created (each closure costs Redis per
-- call): a mutex's first try (nothing of it registered) on a free lock in the latchkey layout.
if kind == 'mutex' and (mode == '-' or mode == 'f') and KEYS[2] == KEYS[1]
    and redis.call('EXISTS', KEYS[1]) == 0 then
  local M, F = KEYS[1], KEYS[7]
  local granted
--#include free-mutex.lua
  if granted then return '1 ' .. string.format('%d', granted) end
end

-- The contended case, as early: a watcher's try on a mutex held by another owner as the string M registers its
-- watch (wait_here below, the same writes) and answers "held" with M's time to live (the general rules' answer: a
-- mutex waits for any live holder, a line or not). Every waiter makes one such try per acquisition, and the lock's
-- release queues behind it on the server and on the connection of a process whose waiters share one
-- (bench/redis-handoff.ts): base.lua's TYPE, closures and holder table cost it more than its writes.
if kind == 'mutex' and (mode == 'w' or mode == 'f') and KEYS[2] == KEYS[1] then
  local v = redis.pcall('GET', KEYS[1])
  if type(v) == 'string' and string.match(v, '^w?%d+|%d+|(.*)$') ~= field then
    local W, P, F = KEYS[5], KEYS[6], KEYS[7]
    local T = redis.call('TIME')
    local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
    local pttl = redis.call('PTTL', KEYS[1])
    -- The holder's release must see this waiter (base.lua, KEYS[1]). PX of the PTTL just read: the same expiry,
    -- or a millisecond later on a server whose clock moved during the script, never earlier (KEEPTTL needs 6.0).
    if string.sub(v, 1, 1) ~= 'w' and pttl > 0 then redis.call('SET', KEYS[1], 'w' .. v, 'PX', pttl) end
    if mode == 'f' or redis.call('ZSCORE', W, field) == false then
--#include next-fence.lua
      redis.call('ZADD', W, string.format('%d', n), field)
    end
    redis.call('HSET', P, field, ARGV[2] .. ' ' .. string.format('%d', now + wait_ttl) .. ' ' .. (ARGV[3] or '-'))
    redis.call('PEXPIRE', W, wait_ttl)
    redis.call('PEXPIRE', P, wait_ttl)
    return '0 ' .. string.format('%d', math.max(1, pttl))
  end
end

--#include base.lua
--#include holders.lua
--#include grant.lua

local lined = kind == 'fair' or kind == 'read' or kind == 'write'

-- Registers the caller as waiting: a place in line (mode q) or a watch (w, f), and marks a mutex holder's string M
-- so that its release sees the waiter (base.lua, KEYS[1]).
local function wait_here()
  if STR and mode ~= '-' then
    local v = redis.call('GET', M)
    local pttl = redis.call('PTTL', M)
    if v and string.sub(v, 1, 1) ~= 'w' and pttl > 0 then redis.call('SET', M, 'w' .. v, 'PX', pttl) end
  end
  if mode == 'q' then
    if redis.call('ZSCORE', Q, field) == false then
      local w = 0
      if kind == 'write' then w = 1 end
      redis.call('ZADD', Q, fmt(next_fence() * 2 + w), field)
    end
  elseif mode ~= 'w' and mode ~= 'f' then
    return
  elseif kind == 'mutex' or kind == 'semaphore' then
    -- A watcher: W keeps the order of arrival, P the spec and expiry (every watcher registers for the same
    -- wait_ttl, so the newest one's is the longest).
    if mode == 'f' or redis.call('ZSCORE', W, field) == false then
      redis.call('ZADD', W, fmt(next_fence()), field)
    end
    redis.call('HSET', P, field, ARGV[2] .. ' ' .. fmt(now + wait_ttl) .. ' ' .. (ARGV[3] or '-'))
    redis.call('PEXPIRE', W, wait_ttl)
    redis.call('PEXPIRE', P, wait_ttl)
    return
  end
  -- The line and the watching readers: E, which vanishes with its last member (and Q with it).
  redis.call('ZADD', E, now + wait_ttl, field)
  local keep = tonumber(redis.call('ZRANGE', E, -1, -1, 'WITHSCORES')[2]) - now
  redis.call('PEXPIRE', E, keep)
  if mode == 'q' then redis.call('PEXPIRE', Q, keep) end
end

-- The first waiter standing before a request of this kind: anyone for fair, a waiting writer otherwise.
local function first_in_line()
  if kind == 'fair' then return redis.call('ZRANGE', Q, 0, 0)[1] end
  local line = redis.call('ZRANGE', Q, 0, -1, 'WITHSCORES')
  for i = 1, #line, 2 do
    if tonumber(line[i + 1]) % 2 == 1 then return line[i] end
  end
  return nil
end

local holders = live_holders()
-- Granted already, by a release handing the lock to this watcher (see handoff).
for _, h in ipairs(holders) do
  if h.f == field and h.exp > now then return '1 ' .. h.tok .. ' ' .. fmt(h.exp - now) end
end
local blocked, frees = false, nil
if kind == 'semaphore' then
  -- Holders of another permit count: the caller gets the count in force, and nothing of it is kept.
  local in_force = permits_in_force(holders, permits)
  if in_force ~= nil then return '2 ' .. in_force end
  if #holders >= permits then
    blocked = true
    for _, h in ipairs(holders) do
      if frees == nil or h.dly < frees then frees = h.dly end
    end
  end
else
  for _, h in ipairs(holders) do
    if kind ~= 'read' or h.kind ~= 'read' then
      blocked = true
      if frees == nil or h.dly > frees then frees = h.dly end
    end
  end
  local other = foreign(#holders)
  if other ~= nil then
    blocked = true
    if other < 0 then frees = nil elseif frees == nil or other > frees then frees = other end
  end
end
if blocked then
  if mode == 'q' then prune_line() end
  wait_here()
  if frees == nil then return '0 -1' end
  return '0 ' .. fmt(math.max(1, frees - now))
end

if lined then
  prune_line()
  local first = first_in_line()
  if first ~= nil and (kind == 'read' or first ~= field) then
    wait_here()
    return '0 -1'
  end
end

local token = fmt(next_fence())
-- Gives up the place in line (E holds everyone in Q) or the watch this attempt registered on an earlier try.
if (mode ~= '-' and mode ~= 'f') or lined then
  if redis.call('ZREM', E, field) == 1 then redis.call('ZREM', Q, field) end
  if (kind == 'mutex' or kind == 'semaphore') and redis.call('ZREM', W, field) == 1 then redis.call('HDEL', P, field) end
end
local exp = now + ttl
local per = nil
if kind == 'semaphore' then per = fmt(permits) end
put(field, kind, exp, exp + delay, token, per)
keep_until(exp + delay, #holders == 0)
return '1 ' .. token
