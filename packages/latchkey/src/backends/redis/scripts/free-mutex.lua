-- A free mutex of the latchkey layout granted: when M does not exist (no holder, no lock-delay left), the token of
-- next_fence and the holder as M itself, a string "<token>|<lockDelayMs>|<field>" whose expiry (PX) is the end of
-- its slot (lease + lock-delay): three commands, no TIME (the lease's end is the key's expiry less lockDelayMs).
-- Unmarked, without reading E or W: base.lua (KEYS[1]) says why a waiter registered on an earlier holder still
-- gets its turn.
-- The token is taken before SET NX tells whether M is free, so a try on a held lock uses one up: tokens only need
-- to increase, and it is still one INCR per script run (next-fence.lua). acquire.lua tests EXISTS first, as its
-- general rules may take a token after this part (a hash of expired records): no script takes two.
-- Expects the locals M, F (KEYS[1] and KEYS[7] of base.lua), field, ttl and delay (numbers, or strings of digits;
-- no lock-delay is the number 0). Included before any function is created (each closure costs Redis per call) by
-- acquire.lua and acquire-mutex.lua, which declare `local granted` before it: set to the token on a grant, each
-- includer replies in its own form.
--
-- Why a string: a grant as a field of the hash M took HSET and PEXPIRE plus a TIME for the record's expiry, and
-- its release a TIME to check it; a string is one SET with PX, checked by its existence (and PTTL with a
-- lock-delay). Redis scripts' fixed cost is most of what is left (bench/redis-uncontended.ts).
--
-- Why processes of the previous version (every holder a field of the hash M) and this one still exclude each other
-- on one lock. Both keep the lock in the same key M, and both grant a mutex only when M does not exist (EXISTS, in
-- the same script as the write, or SET NX; Redis runs scripts one at a time): whichever layout M has, it stops the
-- other version's grant. A previous-version script that meets the string reads it as a hash (HGET, HGETALL) and fails
-- with WRONGTYPE before it writes anything: a loud error, never a grant (its short acquire only tests EXISTS and
-- answers "held"). This version reads M by its TYPE (base.lua), so a hash holder of the previous version, mutex or
-- not, blocks it as before, and a mutex granted as a hash field by a previous version's release (handed to a
-- watcher of this version) is renewed and released in the hash. The other way round, a release of this version
-- hands the lock to a previous version's watcher as a hash record (handoff-mutex.lua: its wake channel lacks `:s:`),
-- so that process can renew and release it. The fencing counter F is the same key for both,
-- so tokens keep increasing across versions. test/redis-rolling-upgrade.test.ts runs the previous scripts.
do
  local T
--#include next-fence.lua
  -- Without a lock-delay (the default) ttl goes to SET as it came: `ttl + delay` makes a number of it, which Redis
  -- then formats back into a string for SET's argument (bench/redis-script-cost.ts).
  local v, px
  if delay == 0 then
    v, px = string.format('%d|0|', n) .. field, ttl
  else
    v, px = string.format('%d|%d|', n, delay) .. field, ttl + delay
  end
  if redis.call('SET', M, v, 'NX', 'PX', px) then granted = n end
end
