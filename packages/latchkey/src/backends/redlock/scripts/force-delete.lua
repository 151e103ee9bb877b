-- Unconditional DEL of the lock and its line of waiters (administrative force release).
-- KEYS: the lock's key, its line, the line's expiries. Reply: 1 when the lock's key was deleted.
local held = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3])
return held
