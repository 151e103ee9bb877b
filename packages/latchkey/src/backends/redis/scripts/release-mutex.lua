-- release of a mutex in the latchkey layout when nobody waits, on its own: three keys and one argument where
-- release.lua takes seven keys and three arguments. When someone waits it does nothing and says so, and the backend
-- runs release.lua, which hands the lock over (the backend sends this script only while the lock has not been seen
-- contended in its process lately).
-- KEYS: M, E and W (KEYS[1], KEYS[4] and KEYS[5] of base.lua). ARGV: the caller's field.
-- Reply: 1 dropped; 0 (nothing done) when `field` holds no valid lease; 2 (nothing done) when someone waits, or when
-- M is a hash (a mutex a previous version's release handed to the caller, or other kinds' holders): release.lua
-- reads those.
--#include caller-string-lease.lua
if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then return 2 end
redis.call('DEL', KEYS[1])
return 1
