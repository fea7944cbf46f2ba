-- Renew one replica's leases and waiters (one call for all of them). A lease found gone (it
-- expired while Redis or the replica was slow, or Redis lost its data) is asserted again: its
-- call still runs.
-- KEYS: holders, queue_exp, marker, server (grace.lua). ARGV: ttl_ms, number of leases, lease ids...,
-- waiter ids...
-- Returns {renewed, reasserted, opened}: `opened` is 1 if this call found the deployment's data
-- gone and opened the grace.
local now = now_ms()
local ttl, leases = tonumber(ARGV[1]), tonumber(ARGV[2])
local _, opened = grace(KEYS[3], KEYS[4], now, ttl)
local renewed, reasserted = 0, 0
for i = 3, 2 + leases do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    renewed = renewed + 1
  else
    reasserted = reasserted + 1
  end
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
end
for i = 3 + leases, #ARGV do
  redis.call('ZADD', KEYS[2], 'XX', now + ttl, ARGV[i])
end
return {renewed, reasserted, opened}
