-- After a holder left: wake one waiter, or grant the lock to the oldest watcher outright. Included after
-- grant.lua by release and leave-queue.

-- The oldest watcher whose registration has not expired, and its spec; drops the expired ones it meets (at
-- most 16 per call, the rest on later calls).
local function live_watcher()
  for _ = 1, 16 do
    local head = redis.call('ZRANGE', W, 0, 0)[1]
    if head == nil then return nil end
    local spec = redis.call('HGET', P, head)
    local exp = spec and tonumber(string.match(spec, ' (%d+) %S+$'))
    if exp ~= nil and exp > now then return head, spec end
    redis.call('ZREM', W, head)
    redis.call('HDEL', P, head)
  end
  return nil
end

-- With the line pruned: names the head of the line, else the oldest live watcher, else (watching readers only)
-- nobody in particular.
local function publish_head(channel)
  local head = redis.call('ZRANGE', Q, 0, 0)[1]
  if head == nil then head = live_watcher() end
  if head == nil and redis.call('EXISTS', E) == 0 then return end
  redis.call('PUBLISH', channel, head or '0')
end

-- Publishes a release when someone waits (always in the Redisson layout, whose Java waiters do not register).
-- The message names the head of the line, else the oldest watcher, so only that waiter wakes.
local function notify(channel, always)
  if always then
    redis.call('PUBLISH', channel, '0')
    return
  end
  if redis.call('EXISTS', E, W) == 0 then return end
  prune_line()
  publish_head(channel)
end

-- Grants the lock to the oldest live mutex/semaphore watcher when the rules let it in now, and publishes
-- "g <field> <token>" on the wake channel of the watcher's process (so no other process wakes), which hands the
-- lease over without another round trip (the watcher's next try would find the grant too). When that channel is
-- `mine` (the caller's own process waits next), the message is returned instead of published: the caller's
-- process learns of the grant from this script's reply, with no PUBLISH and no read on its subscriber
-- connection. Otherwise wakes a waiter as notify() does (the line is pruned here already); returns nil then.
local function handoff(channel, always, mine)
  if always then return notify(channel, true) end
  -- The line goes first; its expired members (a crashed fair waiter) do not hold it. Everyone in Q is in E (Q
  -- expires no later than E), so without E there is no line to look at: one call less on a mutex's handoff.
  if redis.call('EXISTS', E) == 1 then
    prune_line()
    if redis.call('EXISTS', Q) == 1 then return publish_head(channel) end
  end
  local head, spec = live_watcher()
  if head == nil then return publish_head(channel) end
  local kind, ttl, delay, permits = string.match(spec, '^(%a+) (%d+) (%d+) (%d+) ')
  if kind == nil then return publish_head(channel) end
  local holders = live_holders()
  -- A watcher of another permit count is only woken: its own try reports the mismatch.
  if (kind == 'semaphore' and (#holders >= tonumber(permits) or permits_in_force(holders, permits) ~= nil))
      or (kind ~= 'semaphore' and #holders > 0) or foreign(#holders) ~= nil then
    redis.call('PUBLISH', channel, head)
    return
  end
  local token = fmt(next_fence())
  redis.call('ZREM', W, head)
  redis.call('HDEL', P, head)
  local exp = now + tonumber(ttl)
  local wake = string.match(spec, ' (%S+)$')
  -- A watcher of an earlier build (no `:s:` in its wake channel) reads a mutex only as a hash record.
  if string.sub(wake, 1, 16) ~= 'latchkey:wake:s:' then HASH_ONLY = true end
  put(head, kind, exp, exp + tonumber(delay), token, kind == 'semaphore' and permits or nil)
  HASH_ONLY = false
  keep_until(exp + tonumber(delay), #holders == 0)
  if wake == '-' then wake = channel end
  if mine ~= nil and wake == mine then return 'g ' .. head .. ' ' .. token end
  redis.call('PUBLISH', wake, 'g ' .. head .. ' ' .. token)
end
