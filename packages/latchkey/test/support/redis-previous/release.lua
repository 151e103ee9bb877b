-- release.lua as latchkey sent it at commit 117a11b, the last with every holder a field of the hash M (its included
-- parts expanded): a process of that version, for the rolling-upgrade test (test/redis-rolling-upgrade.test.ts).
-- Do not edit.
-- release: drops a holder whose lease is still valid and, when someone waits, hands the lock to the oldest
-- watcher or publishes the release.
-- KEYS: the lock family's seven keys (base.lua). ARGV: field, channel, alwaysPublish (0/1), the caller's wake
-- channel (`-`: none), and optionally the token the lease must have (an orphaned grant is given back only if it
-- was not granted again since).
-- Reply: 1; 0 (no effect) when `field` holds no valid lease; or, when the lock went to a watcher of the caller's
-- own process, "g <field> <token>", the grant that handoff would otherwise have published to that process.

-- The latchkey layout's common cases, before the shared functions below are created: drops the caller's valid
-- lease (as valid_record and drop do) and is done unless someone waits; a mutex's oldest watcher is then granted
-- the lock by handoff-mutex.lua when nothing else stands in the way.
local dropped = false
if KEYS[2] == KEYS[1] then
  local rec = redis.call('HGET', KEYS[1], ARGV[1])
  if not rec then return 0 end
  local T = redis.call('TIME')
  local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
  local exp, tok = string.match(rec, '^%a+|(%d+)|%d+|(%d+)|?%d*$')
  if exp == nil or tonumber(exp) <= now or (ARGV[5] ~= nil and ARGV[5] ~= tok) then return 0 end
  redis.call('HDEL', KEYS[1], ARGV[1])
  if ARGV[3] ~= '1' then
-- A released mutex of the latchkey layout handed to its oldest watcher in ten commands, before the shared functions
-- are created: handoff.lua's grant for the common case (nobody in line, the oldest watcher live, no other holder),
-- without base.lua's closures, its second TIME and live_holders' reads. A release's script is on the critical path
-- of every handoff (the gap from one holder's release to the next one's grant): bench/redis-handoff.ts. Anything
-- else (a line, an expired or non-mutex head, a lock-delay slot still occupied) is left to handoff.lua: nothing is
-- written before every check has passed, so falling through is safe.
-- Included by release.lua after it dropped the caller's lease, when releases are not always published. Expects the
-- locals T (TIME) and now (server ms), and the release's KEYS and ARGV (base.lua, release.lua). Returns from the
-- script when nobody waits (1) or when it granted (as handoff.lua replies); else goes on to the general handoff.
if redis.call('EXISTS', KEYS[4]) == 0 then
  local head = redis.call('ZRANGE', KEYS[5], 0, 0)[1]
  if head == nil then return 1 end
  local spec = redis.call('HGET', KEYS[6], head)
  -- "kind ttlMs lockDelayMs permits mode waitTtlMs expiresAt wakeChannel" (base.lua, KEYS[6]).
  local kind, ttl, delay, wexp, wake
  if spec then kind, ttl, delay, wexp, wake = string.match(spec, '^(%a+) (%d+) (%d+) %d+ %S+ %d+ (%d+) (%S+)$') end
  if kind == 'mutex' and wexp + 0 > now and redis.call('EXISTS', KEYS[1]) == 0 then
    local F = KEYS[7]
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
    local token = string.format('%d', n)
    redis.call('ZREM', KEYS[5], head)
    redis.call('HDEL', KEYS[6], head)
    local exp = now + ttl
    redis.call('HSET', KEYS[1], head, string.format('mutex|%d|%d|%s', exp, exp + delay, token))
    redis.call('PEXPIRE', KEYS[1], ttl + delay)
    if wake == '-' then wake = ARGV[2] end
    if wake == ARGV[4] then return 'g ' .. head .. ' ' .. token end
    redis.call('PUBLISH', wake, 'g ' .. head .. ' ' .. token)
    return 1
  end
end
  end
  dropped = true
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
-- After a holder left: wake one waiter, or grant the lock to the oldest watcher outright. Included after
-- grant.lua by release and leave-queue.

-- The oldest watcher whose registration has not expired, and its spec; drops the expired ones it meets (at
-- most 16 per call, the rest on later calls).
local function live_watcher()
  for _ = 1, 16 do
    local head = redis.call('ZRANGE', W, 0, 0)[1]
    if head == nil then return nil end
    local spec = redis.call('HGET', P, head)
    local exp = spec and tonumber(string.match(spec, ' (%d+) %S+$'))
    if exp ~= nil and exp > now then return head, spec end
    redis.call('ZREM', W, head)
    redis.call('HDEL', P, head)
  end
  return nil
end

-- With the line pruned: names the head of the line, else the oldest live watcher, else (watching readers only)
-- nobody in particular.
local function publish_head(channel)
  local head = redis.call('ZRANGE', Q, 0, 0)[1]
  if head == nil then head = live_watcher() end
  if head == nil and redis.call('EXISTS', E) == 0 then return end
  redis.call('PUBLISH', channel, head or '0')
end

-- Publishes a release when someone waits (always in the Redisson layout, whose Java waiters do not register).
-- The message names the head of the line, else the oldest watcher, so only that waiter wakes.
local function notify(channel, always)
  if always then
    redis.call('PUBLISH', channel, '0')
    return
  end
  if redis.call('EXISTS', E, W) == 0 then return end
  prune_line()
  publish_head(channel)
end

-- Grants the lock to the oldest live mutex/semaphore watcher when the rules let it in now, and publishes
-- "g <field> <token>" on the wake channel of the watcher's process (so no other process wakes), which hands the
-- lease over without another round trip (the watcher's next try would find the grant too). When that channel is
-- `mine` (the caller's own process waits next), the message is returned instead of published: the caller's
-- process learns of the grant from this script's reply, with no PUBLISH and no read on its subscriber
-- connection. Otherwise wakes a waiter as notify() does (the line is pruned here already); returns nil then.
local function handoff(channel, always, mine)
  if always then return notify(channel, true) end
  -- The line goes first; its expired members (a crashed fair waiter) do not hold it. Everyone in Q is in E (Q
  -- expires no later than E), so without E there is no line to look at: one call less on a mutex's handoff.
  if redis.call('EXISTS', E) == 1 then
    prune_line()
    if redis.call('EXISTS', Q) == 1 then return publish_head(channel) end
  end
  local head, spec = live_watcher()
  if head == nil then return publish_head(channel) end
  local kind, ttl, delay, permits = string.match(spec, '^(%a+) (%d+) (%d+) (%d+) ')
  if kind == nil then return publish_head(channel) end
  local holders = live_holders()
  -- A watcher of another permit count is only woken: its own try reports the mismatch.
  if (kind == 'semaphore' and (#holders >= tonumber(permits) or permits_in_force(holders, permits) ~= nil))
      or (kind ~= 'semaphore' and #holders > 0) or foreign(#holders) ~= nil then
    redis.call('PUBLISH', channel, head)
    return
  end
  local token = fmt(next_fence())
  redis.call('ZREM', W, head)
  redis.call('HDEL', P, head)
  local exp = now + tonumber(ttl)
  put(head, kind, exp, exp + tonumber(delay), token, kind == 'semaphore' and permits or nil)
  keep_until(exp + tonumber(delay), #holders == 0)
  local wake = string.match(spec, ' (%S+)$')
  if wake == '-' then wake = channel end
  if mine ~= nil and wake == mine then return 'g ' .. head .. ' ' .. token end
  redis.call('PUBLISH', wake, 'g ' .. head .. ' ' .. token)
end

if not dropped then
  local kind, _, _, tok = valid_record(ARGV[1])
  if kind == nil or (ARGV[5] ~= nil and ARGV[5] ~= tok) then return 0 end
  drop(ARGV[1])
end
return handoff(ARGV[2], ARGV[3] == '1', ARGV[4]) or 1
