-- Places a waiting owner in the line of a lock (as acquire.lua does for a waiting head that finds the lock held),
-- without ever taking the lock: the waiter that is next in its process while another of its process holds the lock.
-- KEYS: the lock's key (unused), its line (zset owner -> ticket), their expiries (hash owner -> "expiresAtMs ttlMs").
-- ARGV: owner, ttlMs, ticket (the same on every node), how long the place lasts unless a round renews it.
-- Reply: 1.
local place_owner, place_ticket, place_ttl, place_ms = ARGV[1], ARGV[3], ARGV[2], ARGV[4]
--#include take-place.lua
return 1
