#!lua
-- The reserve strategy's one atomic step: take `quantity` units of a sale for a user if enough are left and
-- the user has no order yet, and append the reservation to the outbox stream that the relay settles into the
-- SQL store. The shebang makes Redis (>= 7) refuse the whole script up front when out of memory, so it never
-- stops half-way.
--
-- KEYS[1] stock: units left (created from ARGV[1] by the sale's first reservation; stock only decreases)
-- KEYS[2] buyers: hash user id -> order id (one order per user per sale)
-- KEYS[3] outbox: stream of reservations not settled yet
-- ARGV: initial stock, sale id, user id, quantity, order id, created at (epoch ms)
-- Returns {'ordered', order id} (also when this very order id was reserved before: a re-sent call),
-- {'duplicate', the user's order id} or {'sold-out', ''}.
local existing = redis.call('HGET', KEYS[2], ARGV[3])
if existing then
  if existing == ARGV[5] then return { 'ordered', existing } end
  return { 'duplicate', existing }
end
local left = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
local quantity = tonumber(ARGV[4])
if left < quantity then return { 'sold-out', '' } end
redis.call('SET', KEYS[1], left - quantity)
redis.call('HSET', KEYS[2], ARGV[3], ARGV[5])
redis.call('XADD', KEYS[3], '*', 'order', ARGV[5], 'sale', ARGV[2], 'user', ARGV[3], 'quantity', ARGV[4], 'at', ARGV[6])
return { 'ordered', ARGV[5] }
