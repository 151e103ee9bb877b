-- release of a mutex in the latchkey layout when nobody waits, on its own: one key and one argument where release.lua
-- takes seven keys and four arguments. When someone waits it does nothing and says so, and the backend runs the
-- release that hands the lock over (the backend sends this script only while the lock has not been seen contended
-- in its process lately).
-- Whether someone waits is read from M alone: every waiter that registers while M is the string marks it (the `w`
-- of base.lua's KEYS[1] says when, and why a waiter is never left unwoken by a holder whose string lacks the mark),
-- so the release reads one key, where looking at the line and the watchers (E and W) took one more call and two
-- more keys on every uncontended release.
-- KEYS: M (KEYS[1] of base.lua). ARGV: the caller's field.
-- Reply: 1 dropped; 0 (nothing done) when `field` holds no valid lease; 2 (nothing done) when someone waits, or when
-- M is a hash (a mutex a previous version's release handed to the caller, or other kinds' holders): release.lua
-- reads those.
--#include caller-string-lease.lua
if waited ~= '' then return 2 end
redis.call('DEL', KEYS[1])
return 1
