-- Compare-and-delete: a plain DEL could delete the key of the next owner after ours expired.
-- KEYS[1]: the lock's key. ARGV[1]: owner; ARGV[2] (optional): the channel on which to announce the release,
-- with the owner as message, so that waiters subscribed to this node learn of it (redlock-notifier.ts).
-- Reply: 1 deleted, 0 not ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] then redis.call('PUBLISH', ARGV[2], ARGV[1]) end
  return 1
end
return 0
