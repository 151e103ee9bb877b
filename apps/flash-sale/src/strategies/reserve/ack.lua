#!lua
-- Acknowledges settled outbox entries and deletes them, in one step (a settled entry is never read again).
-- KEYS[1] outbox stream; ARGV[1] consumer group; ARGV[2..] entry ids. Returns how many were acknowledged.
local ids = { unpack(ARGV, 2) }
local acked = redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
redis.call('XDEL', KEYS[1], unpack(ids))
return acked
