-- tryAcquire of a mutex in the latchkey layout, first try of an attempt (nothing of it registered), on its own: only
-- the two keys and two or three arguments the free lock needs, where acquire.lua takes seven keys and a packed spec
-- (each key and argument costs the client and the server more than the commands below do;
-- bench/redis-uncontended.ts). A held lock is left to acquire.lua, which registers the wait: the backend sends this
-- script only while the lock has not been seen contended in its process lately.
-- KEYS: M and F (KEYS[1] and KEYS[7] of base.lua). ARGV: the caller's field, ttlMs, and lockDelayMs when not 0.
-- Reply: the token (an integer reply, cheaper for both sides than acquire.lua's string) when granted, else 0
-- (held: nothing was written but the fencing counter, which moved by one; free-mutex.lua says why that is safe).
-- ttl and delay stay strings (delay is 0 when not sent): free-mutex.lua passes ttl to SET as it came when there is no
-- delay, and otherwise only does arithmetic with them, which coerces.
local M, F, field, ttl, delay = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3] or 0
local granted = 0
--#include free-mutex.lua
return granted
