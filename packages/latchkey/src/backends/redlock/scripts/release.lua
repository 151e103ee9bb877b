-- Compare-and-delete: a plain DEL could delete the key of the next owner after ours expired.
-- KEYS[1]: the lock's key. ARGV[1]: owner. Reply: 1 deleted, 0 not ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
