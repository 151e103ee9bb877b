-- KEYS[1]: the lock's key. Reply: 1 when it exists on this node, else 0.
return redis.call('EXISTS', KEYS[1])
