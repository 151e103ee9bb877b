-- acquire.lua as latchkey sent it at commit 117a11b, the last with every holder a field of the hash M (its included
-- parts expanded): a process of that version, for the rolling-upgrade test (test/redis-rolling-upgrade.test.ts).
-- Do not edit.
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
if kind == 'mutex' and (mode == '-' or mode == 'f') and KEYS[2] == KEYS[1] then
  local M, F = KEYS[1], KEYS[7]
  local granted
-- A free mutex of the latchkey layout granted: when M does not exist (no holder, no lock-delay left), the token of
-- next_fence, the record of put and the expiry of keep_until in five commands (four without the counter's idle
-- expiry), as the general rules of acquire.lua would grant it. Expects the locals M, F (KEYS[1] and KEYS[7] of
-- base.lua), field, ttl and delay (numbers, or strings of digits: only arithmetic uses them). Included before any function is created (each closure costs Redis per
-- call) by acquire.lua and acquire-mutex.lua, which declare `local granted` before it: set to the token on a grant,
-- each includer replies in its own form.
if redis.call('EXISTS', M) == 0 then
  local T = redis.call('TIME')
-- The next fencing token of the counter F, as the local `n`; inline, so that the short paths including it
-- (free-mutex.lua, handoff-mutex.lua) create no function (each closure costs Redis per call); grant.lua's
-- next_fence wraps it. Expects the locals F (KEYS[7] of base.lua) and T (the script's TIME).
-- A missing counter (new, expired after FENCE_IDLE_MS without a token, or lost in a restart without
-- persistence) restarts at the server clock in microseconds. Why that is above every token issued before:
-- the counter only ever moves by one INCR per script run (no script takes a token twice), and Redis
-- runs scripts one at a time, each well over a microsecond (7-8 µs of server time per call on average in
-- INFO commandstats here), so a counter that started at the clock, or at 1, never gets ahead of the clock
-- in µs: each value is at most the clock at the moment it was issued. It vanishes only FENCE_IDLE_MS after
-- its last INCR, so the restart reads a clock FENCE_IDLE_MS * 1000 µs past the moment of the last token,
-- and is higher with that much to spare (which also absorbs a server clock stepped back by less than
-- FENCE_IDLE_MS). Every grant refreshes the expiry, so a busy lock's counter never restarts.
local n = redis.call('INCR', F)
if n == 1 then
  n = tonumber(T[1]) * 1000000 + tonumber(T[2])
  redis.call('SET', F, string.format('%d', n))
end
if FENCE_IDLE_MS > 0 then redis.call('PEXPIRE', F, FENCE_IDLE_MS) end
  -- T's strings coerce in arithmetic: tonumber would be one more call each.
  local exp = T[1] * 1000 + math.floor(T[2] / 1000) + ttl
  redis.call('HSET', M, field, string.format('mutex|%d|%d|%d', exp, exp + delay, n))
  redis.call('PEXPIRE', M, ttl + delay)
  granted = n
end
  if granted then return '1 ' .. string.format('%d', granted) end
end

-- The state of one lock family (see key-layout.ts), all keys under one hash tag, and the records of its holders.
-- Included by every script of the Redis backend (each script's header says where). What each key holds:
--
-- KEYS[1] M: hash of holders. In the latchkey layout, field -> record "kind|expiresAt|delayUntil|token" (server
--   ms), and for a semaphore holder "|permits" after it: the count in force while it holds. In the Redisson
--   layout, field -> 1 exactly as Redisson's RLock hash (a Java client sees the lock as taken while M exists),
--   and the records live in KEYS[2].
-- KEYS[2] X: the records' hash: M itself in the latchkey layout, a separate hash in the Redisson layout, where a
--   field of M without a record is a foreign (Redisson) holder, exclusive until M expires. M and X expire when
--   the last holder's slot (lease + lock-delay) frees.
-- KEYS[3] Q: zset of the line (fair waiters, waiting writers), score seq*2 (+1 for a writer).
-- KEYS[4] E: zset member -> expiry (ms) of the line's members and of watching readers. A release publishes only
--   when E or W is not empty.
-- KEYS[5] W: zset of the mutex/semaphore watchers in order of arrival (score: a sequence number). A release
--   names the first of Q, else the first of W, so one waiter across all processes is woken, oldest first.
-- KEYS[6] P: hash watcher field -> "<its acquire spec> <expiresAt> <wake channel>" ("kind ttlMs lockDelayMs
--   permits mode waitTtlMs expiresAt channel"), so a release can grant the lock to the oldest live watcher
--   itself and tell only that watcher's process (see handoff in handoff.lua), and drops the dead ones it meets
--   on the way. W and P expire with their newest watcher.
-- KEYS[7] F: the fencing counter. In the latchkey layout it expires FENCE_IDLE_MS after the last token it issued
--   (a lock per order would otherwise leave one key per order forever); next_fence in grant.lua says why tokens
--   still only increase. FENCE_IDLE_MS is a literal the loader puts on each script's first line (lua-scripts.ts);
--   0 (the Redisson layout, whose Java clients INCR the same key with no restart rule) keeps it forever.
--
-- Time is the server's (TIME), so every client measures leases with one clock. Every local function below is a
-- closure Redis creates on each call, which is why the shared code is split into the few parts each script needs.
local M, X, Q, E, W, P, F = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local SPLIT = X ~= M
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)

local function fmt(n) return string.format('%d', n) end

-- per: a semaphore holder's permits ('' when the record has none).
local function parse(rec)
  local kind, exp, dly, tok, per = string.match(rec, '^(%a+)|(%d+)|(%d+)|(%d+)|?(%d*)$')
  return kind, tonumber(exp), tonumber(dly), tok, per
end

-- The record of holder f while its lease is valid (expiresAt > now), else nil.
local function valid_record(f)
  local rec = redis.call('HGET', X, f)
  if not rec or (SPLIT and redis.call('HEXISTS', M, f) == 0) then return nil end
  local kind, exp, dly, tok, per = parse(rec)
  if exp == nil or exp <= now then return nil end
  return kind, exp, dly, tok, per
end

-- Sets the record of holder f; per: a semaphore's permits (as sent), '' or nil for the other kinds.
local function put(f, kind, exp, dly, tok, per)
  local rec = kind .. '|' .. fmt(exp) .. '|' .. fmt(dly) .. '|' .. tok
  if per ~= nil and per ~= '' then rec = rec .. '|' .. per end
  if SPLIT then
    redis.call('HSET', M, f, 1)
    redis.call('HSET', X, f, rec)
  else
    redis.call('HSET', M, f, rec)
  end
end

-- Keeps M (and X) alive until t or longer; `fresh`: no other holder, so no TTL to preserve.
local function keep_until(t, fresh)
  local need = t - now
  if fresh or redis.call('PTTL', M) < need then redis.call('PEXPIRE', M, need) end
  if SPLIT and (fresh or redis.call('PTTL', X) < need) then redis.call('PEXPIRE', X, need) end
end
-- Who holds the lock now: the live holders (dropping the expired ones) and a foreign (Redisson) holder.
-- Included after base.lua by acquire, release, leave-queue, is-locked and force-release.

local function drop(f)
  redis.call('HDEL', M, f)
  if SPLIT then redis.call('HDEL', X, f) end
end

-- Holders still occupying their slot; drops the others (and, split, records whose M field vanished, e.g. after
-- Redisson's forceUnlock deleted M).
local function live_holders()
  local list = {}
  if redis.call('EXISTS', M) == 0 then
    if SPLIT then redis.call('DEL', X) end
    return list
  end
  local raw = redis.call('HGETALL', X)
  for i = 1, #raw, 2 do
    local f = raw[i]
    local kind, exp, dly, tok, per = parse(raw[i + 1])
    if dly ~= nil and dly > now and (not SPLIT or redis.call('HEXISTS', M, f) == 1) then
      list[#list + 1] = { f = f, kind = kind, exp = exp, dly = dly, tok = tok, per = per }
    else
      drop(f)
    end
  end
  return list
end

-- Whether M holds a field of another client (after live_holders pruned ours), and until when (-1: unknown).
local function foreign(n)
  if not SPLIT or redis.call('HLEN', M) <= n then return nil end
  local pttl = redis.call('PTTL', M)
  if pttl < 0 then return -1 end
  return now + pttl
end
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
-- The next fencing token of the counter F, as the local `n`; inline, so that the short paths including it
-- (free-mutex.lua, handoff-mutex.lua) create no function (each closure costs Redis per call); grant.lua's
-- next_fence wraps it. Expects the locals F (KEYS[7] of base.lua) and T (the script's TIME).
-- A missing counter (new, expired after FENCE_IDLE_MS without a token, or lost in a restart without
-- persistence) restarts at the server clock in microseconds. Why that is above every token issued before:
-- the counter only ever moves by one INCR per script run (no script takes a token twice), and Redis
-- runs scripts one at a time, each well over a microsecond (7-8 µs of server time per call on average in
-- INFO commandstats here), so a counter that started at the clock, or at 1, never gets ahead of the clock
-- in µs: each value is at most the clock at the moment it was issued. It vanishes only FENCE_IDLE_MS after
-- its last INCR, so the restart reads a clock FENCE_IDLE_MS * 1000 µs past the moment of the last token,
-- and is higher with that much to spare (which also absorbs a server clock stepped back by less than
-- FENCE_IDLE_MS). Every grant refreshes the expiry, so a busy lock's counter never restarts.
local n = redis.call('INCR', F)
if n == 1 then
  n = tonumber(T[1]) * 1000000 + tonumber(T[2])
  redis.call('SET', F, string.format('%d', n))
end
if FENCE_IDLE_MS > 0 then redis.call('PEXPIRE', F, FENCE_IDLE_MS) end
  return n
end

local lined = kind == 'fair' or kind == 'read' or kind == 'write'

-- Registers the caller as waiting: a place in line (mode q) or a watch (w, f).
local function wait_here()
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
