import {
  BASE,
  DROP,
  FOREIGN,
  HANDOFF,
  KEEP_UNTIL,
  LIVE_HOLDERS,
  LIVE_WATCHER,
  NEXT_FENCE,
  NOTIFY,
  PERMITS_IN_FORCE,
  PRUNE_LINE,
  PUT,
} from './prelude.js'

/** The record of ARGV[1] while its lease is valid (expiresAt > now), else nil. */
const VALID_RECORD = `
local function valid_record(f)
  local rec = redis.call('HGET', X, f)
  if not rec or (SPLIT and redis.call('HEXISTS', M, f) == 0) then return nil end
  local kind, exp, dly, tok, per = parse(rec)
  if exp == nil or exp <= now then return nil end
  return kind, exp, dly, tok, per
end
`

/**
 * The latchkey layout's common case, before the closures of the general code are defined (see FREE_MUTEX in
 * acquire.ts): drops the caller's valid lease (as valid_record and drop do) and is done unless someone waits.
 */
const DROP_OWN = `
local dropped = false
if KEYS[2] == KEYS[1] then
  local rec = redis.call('HGET', KEYS[1], ARGV[1])
  if not rec then return 0 end
  local T = redis.call('TIME')
  local exp, tok = string.match(rec, '^%a+|(%d+)|%d+|(%d+)|?%d*$')
  if exp == nil or tonumber(exp) <= tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
      or (ARGV[4] ~= nil and ARGV[4] ~= tok) then
    return 0
  end
  redis.call('HDEL', KEYS[1], ARGV[1])
  if ARGV[3] ~= '1' and redis.call('EXISTS', KEYS[4], KEYS[5]) == 0 then return 1 end
  dropped = true
end
`

/**
 * release: drops a holder whose lease is still valid and hands the lock to the oldest watcher, or publishes
 * the release, when someone waits.
 * ARGV: field, channel, alwaysPublish (0/1), optionally the token the lease must have (an orphaned grant
 * is given back only if it was not granted again since). Returns 1, or 0 (no effect) when `field` holds
 * no valid lease.
 */
const GIVE_AWAY = `${VALID_RECORD}${DROP}${LIVE_HOLDERS}${FOREIGN}${PRUNE_LINE}${LIVE_WATCHER}${PUT}${KEEP_UNTIL}${PERMITS_IN_FORCE}${NEXT_FENCE}${NOTIFY}${HANDOFF}`

export const RELEASE = `${DROP_OWN}${BASE}${GIVE_AWAY}
if not dropped then
  local kind, _, _, tok = valid_record(ARGV[1])
  if kind == nil or (ARGV[4] ~= nil and ARGV[4] ~= tok) then return 0 end
  drop(ARGV[1])
end
handoff(ARGV[2], ARGV[3] == '1')
return 1
`

/**
 * renew: extends a still-valid lease to ttlMs from now (its lock-delay moves along); never creates state.
 * ARGV: field, ttlMs. Returns 1, or 0 when `field` holds no valid lease.
 */
export const RENEW = `${BASE}${VALID_RECORD}${PUT}${KEEP_UNTIL}
local kind, exp, dly, tok, per = valid_record(ARGV[1])
if kind == nil then return 0 end
local nexp = now + tonumber(ARGV[2])
put(ARGV[1], kind, nexp, nexp + (dly - exp), tok, per)
keep_until(nexp + (dly - exp), false)
return 1
`

/**
 * leaveQueue: gives up a place in line or a watch and wakes the new head (the one leaving may have been woken
 * and not have retried). A grant a release made to this watcher that it never took is passed on.
 * ARGV: field, channel, alwaysPublish.
 */
export const LEAVE_QUEUE = `${BASE}${GIVE_AWAY}
if valid_record(ARGV[1]) ~= nil then
  drop(ARGV[1])
  handoff(ARGV[2], ARGV[3] == '1')
  return 1
end
local removed = redis.call('ZREM', Q, ARGV[1]) + redis.call('ZREM', W, ARGV[1])
redis.call('ZREM', E, ARGV[1])
redis.call('HDEL', P, ARGV[1])
if removed > 0 then notify(ARGV[2], ARGV[3] == '1') end
return removed
`

/** isLocked: whether any holder occupies the lock (a semaphore: all permits). ARGV: kind, permits. */
export const IS_LOCKED = `${BASE}${DROP}${LIVE_HOLDERS}${FOREIGN}
local holders = live_holders()
if ARGV[1] == 'semaphore' then
  if #holders >= tonumber(ARGV[2]) then return 1 end
  return 0
end
if #holders > 0 or foreign(0) ~= nil then return 1 end
return 0
`

/**
 * forceRelease: drops every holder and waiter (Redisson's forceUnlock) and wakes every waiter.
 * ARGV: channel, alwaysPublish. Returns 1 when anything was held.
 */
export const FORCE_RELEASE = `${BASE}${DROP}${LIVE_HOLDERS}${FOREIGN}
local holders = live_holders()
local held = #holders > 0 or foreign(0) ~= nil
redis.call('DEL', M, X, Q, E, W, P)
if ARGV[2] == '1' then
  redis.call('PUBLISH', ARGV[1], '0')
else
  redis.call('PUBLISH', ARGV[1], '*')
end
if held then return 1 end
return 0
`
