-- A released mutex of the latchkey layout handed to its oldest watcher in nine commands, before the shared functions
-- are created: handoff.lua's grant for the common case (nobody in line, the oldest watcher live, no other holder),
-- without base.lua's closures, its second TIME and live_holders' reads. A release's script is on the critical path
-- of every handoff (the gap from one holder's release to the next one's grant): bench/redis-handoff.ts. Anything
-- else (a line, an expired or non-mutex head, a lock-delay slot still occupied) is left to handoff.lua: nothing is
-- written before every check has passed, so falling through is safe. The grant is the string M of free-mutex.lua,
-- or, for a watcher of an earlier build, the hash record that build reads.
-- Included by release.lua after it dropped the caller's lease, when releases are not always published. Expects the
-- locals T (TIME) and now (server ms), and the release's KEYS and ARGV (base.lua, release.lua). Returns from the
-- script when nobody waits (1) or when it granted (as handoff.lua replies); else goes on to the general handoff.
if redis.call('EXISTS', KEYS[4]) == 0 then
  -- The two oldest: the second says whether the new holder's string is marked (grant-string-mutex.lua).
  local heads = redis.call('ZRANGE', KEYS[5], 0, 1)
  local head, more = heads[1], heads[2] ~= nil
  if head == nil then return 1 end
  local spec = redis.call('HGET', KEYS[6], head)
  -- "kind ttlMs lockDelayMs permits mode waitTtlMs expiresAt wakeChannel" (base.lua, KEYS[6]).
  local kind, ttl, delay, wexp, wake
  if spec then kind, ttl, delay, wexp, wake = string.match(spec, '^(%a+) (%d+) (%d+) %d+ %S+ %d+ (%d+) (%S+)$') end
  if kind == 'mutex' and wexp + 0 > now and redis.call('EXISTS', KEYS[1]) == 0 then
    local M, W, P, F, channel, mine = KEYS[1], KEYS[5], KEYS[6], KEYS[7], ARGV[2], ARGV[4]
--#include grant-string-mutex.lua
  end
end
