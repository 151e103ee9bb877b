-- The state of one lock family (see key-layout.ts), all keys under one hash tag, and the records of its holders.
-- Included by every script of the Redis backend (each script's header says where). What each key holds:
--
-- KEYS[1] M: the holders. In the latchkey layout a plain mutex's holder is M itself, a string
--   "<token>|<lockDelayMs>|<field>" expiring when its slot frees (lease + lock-delay, so its lease ends lockDelayMs
--   before the key does): one SET to grant, one DEL to release (free-mutex.lua says why, and why processes of
--   the previous version, which kept every holder in the hash, still exclude this one). A leading `w` marks a
--   string whose holder must hand over or publish on release (release-mutex.lua reads only M): a waiter that
--   registers in E or W while M is the string adds it (acquire.lua), and a grant that leaves someone registered
--   writes it (put, grant-string-mutex.lua). A grant on a free M (free-mutex.lua) writes no mark without looking
--   at E and W: every waiter still registered then either was woken by the release that freed M, or was told to
--   retry no later than M's expiry (its retryAfterMs), which has passed when M is free. So it tries again soon:
--   it finds M held and registers again, marking the new string, or finds M free (the new holder released unseen
--   in between) and takes it. The cost is a few ms of a waiter's wait, never a wake-up lost for good. A waiter
--   that left keeps the mark: only one more round trip for its holder's release. Every other holder, and a
--   mutex holder granted by or to a process of the previous version, is a field of M as a hash: field -> record
--   "kind|expiresAt|delayUntil|token" (server ms), and for a semaphore holder "|permits" after it: the count in
--   force while it holds. In the Redisson layout, field -> 1 exactly as Redisson's RLock hash (a Java client sees
--   the lock as taken while M exists), and the records live in KEYS[2]; no string there.
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
-- M is a mutex holder's string (latchkey layout only); drop and put keep it current. HASH_ONLY: put writes a mutex
-- as a hash record (for a watcher of an earlier build, handoff.lua).
local STR = not SPLIT and redis.call('TYPE', M).ok == 'string'
local HASH_ONLY = false

local function fmt(n) return string.format('%d', n) end

-- per: a semaphore holder's permits ('' when the record has none).
local function parse(rec)
  local kind, exp, dly, tok, per = string.match(rec, '^(%a+)|(%d+)|(%d+)|(%d+)|?(%d*)$')
  return kind, tonumber(exp), tonumber(dly), tok, per
end

-- The holder of M as a string: its field, then its record as parse returns it; nil when M is gone.
local function string_holder()
  local v = redis.call('GET', M)
  if not v then return nil end
  local tok, delay, f = string.match(v, '^w?(%d+)|(%d+)|(.*)$')
  local dly = now + redis.call('PTTL', M)
  return f, 'mutex', dly - tonumber(delay), dly, tok, ''
end

-- The record of holder f while its lease is valid (expiresAt > now), else nil.
local function valid_record(f)
  if STR then
    local g, kind, exp, dly, tok, per = string_holder()
    if g ~= f or exp <= now then return nil end
    return kind, exp, dly, tok, per
  end
  local rec = redis.call('HGET', X, f)
  if not rec or (SPLIT and redis.call('HEXISTS', M, f) == 0) then return nil end
  local kind, exp, dly, tok, per = parse(rec)
  if exp == nil or exp <= now then return nil end
  return kind, exp, dly, tok, per
end

-- Sets the record of holder f; per: a semaphore's permits (as sent), '' or nil for the other kinds. A mutex of the
-- latchkey layout is the string (with its expiry) unless M is a hash: a previous version's grant being renewed. The
-- string is marked (KEYS[1]) when anyone is registered in E or W: callers have removed f's own registration first.
local function put(f, kind, exp, dly, tok, per)
  if kind == 'mutex' and not SPLIT and not HASH_ONLY and (STR or redis.call('EXISTS', M) == 0) then
    local w = ''
    if redis.call('EXISTS', E, W) > 0 then w = 'w' end
    redis.call('SET', M, w .. tok .. '|' .. fmt(dly - exp) .. '|' .. f, 'PX', dly - now)
    STR = true
    return
  end
  local rec = kind .. '|' .. fmt(exp) .. '|' .. fmt(dly) .. '|' .. tok
  if per ~= nil and per ~= '' then rec = rec .. '|' .. per end
  if SPLIT then
    redis.call('HSET', M, f, 1)
    redis.call('HSET', X, f, rec)
  else
    redis.call('HSET', M, f, rec)
  end
end

-- Keeps M (and X) alive until t or longer; `fresh`: no other holder, so no TTL to preserve. A string M has its
-- own holder's expiry (put) and nobody else's.
local function keep_until(t, fresh)
  if STR then return end
  local need = t - now
  if fresh or redis.call('PTTL', M) < need then redis.call('PEXPIRE', M, need) end
  if SPLIT and (fresh or redis.call('PTTL', X) < need) then redis.call('PEXPIRE', X, need) end
end
