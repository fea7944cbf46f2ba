-- Take a global lease for ARGV[1], or join the FIFO queue, or refuse. Atomic; times from Redis.
-- KEYS: holders (zset id -> lease expiry ms), queue (zset id -> ticket), queue_exp (zset id ->
-- waiter expiry ms), seq (ticket counter), marker, server, history (grace.lua). ARGV: id,
-- max_active, max_waiting, ttl_ms, the epoch and writes its replica saw last (grace.lua).
-- Returns {1, 0, 0, opened, epoch, writes} granted, {0, rank, ticket, ...} waiting at `rank` (0 =
-- next) with its place in line (`ticket`: the FIFO order, fixed while it waits), {-1, waiting, 0,
-- ...} queue full; `opened` is why this call opened the grace (0: it did not), `epoch, writes` the
-- history's point after it (grace.lua).
local holders, queue, queue_exp, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id = ARGV[1]
local max_active, max_waiting, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
local left, opened, epoch, writes = grace(KEYS[5], KEYS[6], KEYS[7], now, ttl,
  tonumber(ARGV[5]), tonumber(ARGV[6]), true)

-- Leases and waiters whose replica stopped renewing them (it died) are gone.
redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
local stale = redis.call('ZRANGEBYSCORE', queue_exp, '-inf', now, 'LIMIT', 0, 1000)
if #stale > 0 then
  redis.call('ZREM', queue, unpack(stale))
  redis.call('ZREM', queue_exp, unpack(stale))
end

-- A lease it holds is renewed, in a grace too: that is a lease asserted again.
if redis.call('ZSCORE', holders, id) then
  redis.call('ZADD', holders, now + ttl, id)
  return {1, 0, 0, opened, epoch, writes}
end
-- In the grace nothing new is granted: the live leases are being asserted again.
local free = max_active - redis.call('ZCARD', holders)
if left > 0 then
  free = 0
end
local rank = redis.call('ZRANK', queue, id)
if not rank then
  local waiting = redis.call('ZCARD', queue)
  if free > 0 and waiting == 0 then
    redis.call('ZADD', holders, now + ttl, id)
    return {1, 0, 0, opened, epoch, writes}
  end
  if waiting >= max_waiting then
    return {-1, waiting, 0, opened, epoch, writes}
  end
  redis.call('ZADD', queue, redis.call('INCR', seq), id)
  rank = waiting
end
-- Strict FIFO: the waiter at `rank` is served once `rank` waiters ahead of it can all be too.
if rank < free then
  redis.call('ZREM', queue, id)
  redis.call('ZREM', queue_exp, id)
  redis.call('ZADD', holders, now + ttl, id)
  return {1, 0, 0, opened, epoch, writes}
end
redis.call('ZADD', queue_exp, now + ttl, id)
return {0, rank, tonumber(redis.call('ZSCORE', queue, id)), opened, epoch, writes}
