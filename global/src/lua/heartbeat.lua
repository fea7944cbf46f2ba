-- Renew one replica's leases and waiters (one call for all of them). A lease found gone (it
-- expired while Redis or the replica was slow, or Redis lost it) is asserted again: its call
-- still runs.
-- KEYS: holders, queue_exp, marker, server, history (grace.lua). ARGV: ttl_ms, the epoch and
-- writes the replica saw last (grace.lua), number of leases, lease ids..., waiter ids...
-- Returns {renewed, reasserted, opened, epoch, writes}: `opened` is why this call opened the grace
-- (0: it did not), `epoch, writes` the history's point after it (grace.lua).
local now = now_ms()
local ttl, leases = tonumber(ARGV[1]), tonumber(ARGV[4])
local _, opened, epoch, writes = grace(KEYS[3], KEYS[4], KEYS[5], now, ttl, tonumber(ARGV[2]),
  tonumber(ARGV[3]), true)
local renewed, reasserted = 0, 0
for i = 5, 4 + leases do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    renewed = renewed + 1
  else
    reasserted = reasserted + 1
  end
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
end
for i = 5 + leases, #ARGV do
  redis.call('ZADD', KEYS[2], 'XX', now + ttl, ARGV[i])
end
return {renewed, reasserted, opened, epoch, writes}
