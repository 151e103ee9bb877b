-- PEXPIRE only while the key still holds our value. KEYS[1]: the lock's key. ARGV: owner, ttlMs.
-- Reply: 1 renewed, 0 not ours (expired or taken).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
