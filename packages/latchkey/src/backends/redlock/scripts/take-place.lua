-- A waiter's place in the lock's line on this node: its ticket in the line (KEYS[2], zset owner -> ticket) and, in
-- KEYS[3] (hash owner -> "expiresAtMs ttlMs"), when the place ends on this node's clock and the lease it asks for.
-- Both keys are stretched to the place's length, so that the line never outlives its last waiter by more than one
-- place. Expects the locals place_owner, place_ticket, place_ttl and place_ms (strings of digits). Included by
-- acquire.lua (a waiting head that finds the lock held), place.lua and release.lua (the waiter behind a handover).
local place_time = redis.call('TIME')
local place_now = tonumber(place_time[1]) * 1000 + math.floor(tonumber(place_time[2]) / 1000)
redis.call('ZADD', KEYS[2], 'NX', place_ticket, place_owner)
redis.call('HSET', KEYS[3], place_owner, (place_now + tonumber(place_ms)) .. ' ' .. place_ttl)
redis.call('PEXPIRE', KEYS[2], place_ms)
redis.call('PEXPIRE', KEYS[3], place_ms)
