-- KEYS[1]: the lock's key. Reply: {holder or '', pttl} on this node (operator inspection; reads only).
local v = redis.call('GET', KEYS[1])
if not v then return {'', -2} end
return {v, redis.call('PTTL', KEYS[1])}
