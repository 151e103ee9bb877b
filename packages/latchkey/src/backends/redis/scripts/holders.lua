-- Who holds the lock now: the live holders (dropping the expired ones) and a foreign (Redisson) holder.
-- Included after base.lua by acquire, release, leave-queue, is-locked and force-release.

local function drop(f)
  if STR then
    redis.call('DEL', M)
    STR = false
    return
  end
  redis.call('HDEL', M, f)
  if SPLIT then redis.call('HDEL', X, f) end
end

-- Holders still occupying their slot; drops the others (and, split, records whose M field vanished, e.g. after
-- Redisson's forceUnlock deleted M).
local function live_holders()
  local list = {}
  if STR then
    -- A string exists only while its slot lasts: its holder is live.
    local f, kind, exp, dly, tok, per = string_holder()
    if f ~= nil then list[1] = { f = f, kind = kind, exp = exp, dly = dly, tok = tok, per = per } end
    return list
  end
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
