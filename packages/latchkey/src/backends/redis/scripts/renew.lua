-- renew: extends a still-valid lease to ttlMs from now (its lock-delay moves along); never creates state.
-- KEYS: the lock family's first six keys (base.lua; not the fencing counter). ARGV: field, ttlMs.
-- Reply: 1, or 0 when `field` holds no valid lease.

--#include base.lua

local kind, exp, dly, tok, per = valid_record(ARGV[1])
if kind == nil then return 0 end
local nexp = now + tonumber(ARGV[2])
put(ARGV[1], kind, nexp, nexp + (dly - exp), tok, per)
keep_until(nexp + (dly - exp), false)
return 1
