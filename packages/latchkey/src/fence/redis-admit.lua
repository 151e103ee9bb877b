-- The Redis fence store's admit, one script so the compare and the write are atomic.
-- KEYS[1]: the highest token admitted for one name (a decimal string). ARGV[1]: the token, in decimal without
-- leading zeros. Reply: {1, token} when admitted (equal is admitted: the same holder writing again), else
-- {0, highest}. Tokens compare as decimal strings (the longer is greater), never as Lua numbers: a double rounds
-- above 2^53, and ZooKeeper's zxids can be that large.
local seen = redis.call('GET', KEYS[1])
local token = ARGV[1]
if seen and (#seen > #token or (#seen == #token and seen > token)) then return { 0, seen } end
if seen ~= token then redis.call('SET', KEYS[1], token) end
return { 1, token }
