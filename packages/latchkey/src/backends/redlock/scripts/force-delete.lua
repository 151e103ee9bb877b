-- Unconditional DEL (administrative force release). KEYS[1]: the lock's key. Reply: 1 when something was deleted.
return redis.call('DEL', KEYS[1])
