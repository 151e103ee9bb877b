/**
 * Lua shared by the scripts, as snippets each script includes as needed (closures cost per call). One lock family's state (see key-layout.ts), all keys under one hash tag:
 *
 * - KEYS[1] M: hash of holders. In the latchkey layout, field -> record "kind|expiresAt|delayUntil|token"
 *   (server ms), and for a semaphore holder "|permits" after it: the count in force while it holds. In the Redisson layout, field -> 1 exactly as Redisson's RLock hash (a Java client sees the
 *   lock as taken while M exists), and the records live in KEYS[2].
 * - KEYS[2] X: the records' hash: M itself in the latchkey layout, a separate hash in the Redisson layout,
 *   where a field of M without a record is a foreign (Redisson) holder, exclusive until M expires.
 *   M and X expire when the last holder's slot (lease + lock-delay) frees.
 * - KEYS[3] Q: zset of the line (fair waiters, waiting writers), score seq*2 (+1 for a writer).
 * - KEYS[5] W: zset of the mutex/semaphore watchers in order of arrival (score: a sequence number). A release
 *   names the first of Q, else the first of W, so one waiter across all processes is woken, oldest first.
 * - KEYS[4] E: zset member -> expiry (ms) of the line's members and of watching readers. A release publishes
 *   only when E or W is not empty.
 * - KEYS[6] P: hash watcher field -> "<its acquire spec> <expiresAt> <wake channel>" ("kind ttlMs lockDelayMs
 *   permits mode waitTtlMs expiresAt channel"), so a release can grant the lock to the oldest live watcher
 *   itself and tell only that watcher's process (see HANDOFF), and drops the dead ones it meets on the way.
 *   W and P expire with their newest watcher.
 * - KEYS[7] F: the fencing counter. In the latchkey layout it expires FENCE_IDLE_MS after the last token it
 *   issued (a lock per order would otherwise leave one key per order forever); NEXT_FENCE says why tokens
 *   still only increase. FENCE_IDLE_MS is a literal each script is built with (scripts/index.ts); 0 (the
 *   Redisson layout, whose Java clients INCR the same key with no restart rule) keeps it forever.
 *
 * Time is the server's (`TIME`), so every client measures leases with one clock.
 */
export const BASE = `local M, X, Q, E, W, P, F = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local SPLIT = X ~= M
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)

local function fmt(n) return string.format('%d', n) end

-- per: a semaphore holder's permits ('' when the record has none).
local function parse(rec)
  local kind, exp, dly, tok, per = string.match(rec, '^(%a+)|(%d+)|(%d+)|(%d+)|?(%d*)$')
  return kind, tonumber(exp), tonumber(dly), tok, per
end

`

export const DROP = `
local function drop(f)
  redis.call('HDEL', M, f)
  if SPLIT then redis.call('HDEL', X, f) end
end
`

export const LIVE_HOLDERS = `
-- Holders still occupying their slot; drops the others (and, split, records whose M field vanished,
-- e.g. after Redisson's forceUnlock deleted M).
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
`

export const FOREIGN = `
-- Whether M holds a field of another client (after live_holders pruned ours), and until when (-1: unknown).
local function foreign(n)
  if not SPLIT or redis.call('HLEN', M) <= n then return nil end
  local pttl = redis.call('PTTL', M)
  if pttl < 0 then return -1 end
  return now + pttl
end
`

export const PRUNE_LINE = `
local function prune_line()
  local gone = redis.call('ZRANGEBYSCORE', E, '-inf', now)
  if #gone == 0 then return end
  for i = 1, #gone do redis.call('ZREM', Q, gone[i]) end
  redis.call('ZREMRANGEBYSCORE', E, '-inf', now)
end
`

export const LIVE_WATCHER = `
-- The oldest watcher whose registration has not expired, and its spec; drops the expired ones it meets
-- (at most 16 per call, the rest on later calls).
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
`

export const PUT = `
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
`

export const KEEP_UNTIL = `
-- Keeps M (and X) alive until t or longer; \`fresh\`: no other holder, so no TTL to preserve.
local function keep_until(t, fresh)
  local need = t - now
  if fresh or redis.call('PTTL', M) < need then redis.call('PEXPIRE', M, need) end
  if SPLIT and (fresh or redis.call('PTTL', X) < need) then redis.call('PEXPIRE', X, need) end
end
`

export const PERMITS_IN_FORCE = `
-- The permits another semaphore holder recorded, when they differ from per (else nil): the count in force.
local function permits_in_force(holders, per)
  for _, h in ipairs(holders) do
    if h.per ~= '' and tonumber(h.per) ~= tonumber(per) then return h.per end
  end
  return nil
end
`

export const NEXT_FENCE = `
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
`

export const NOTIFY = `
-- With the line pruned: names the head of the line, else the oldest live watcher, else (watching readers
-- only) nobody in particular.
local function publish_head(channel)
  local head = redis.call('ZRANGE', Q, 0, 0)[1]
  if head == nil then head = live_watcher() end
  if head == nil and redis.call('EXISTS', E) == 0 then return end
  redis.call('PUBLISH', channel, head or '0')
end

-- Publishes a release when someone waits (always in the Redisson layout, whose Java waiters do not
-- register). The message names the head of the line, else the oldest watcher, so only that waiter wakes.
local function notify(channel, always)
  if always then
    redis.call('PUBLISH', channel, '0')
    return
  end
  if redis.call('EXISTS', E, W) == 0 then return end
  prune_line()
  publish_head(channel)
end
`

export const HANDOFF = `
-- After a release: grants the lock to the oldest live mutex/semaphore watcher when the rules let it in now,
-- and publishes "g <field> <token>" on the wake channel of the watcher's process (so no other process wakes),
-- which hands the lease over without another round trip (the watcher's next try would find the grant too).
-- Otherwise wakes a waiter as notify() does (the line is pruned here already).
local function handoff(channel, always)
  if always then return notify(channel, true) end
  -- The line goes first; its expired members (a crashed fair waiter) do not hold it.
  if redis.call('EXISTS', E) == 1 then prune_line() end
  if redis.call('EXISTS', Q) == 1 then return publish_head(channel) end
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
  redis.call('PUBLISH', wake, 'g ' .. head .. ' ' .. token)
end
`
