-- Give back ARGV[1]'s lease, or take it out of the queue; wake the waiters of every replica.
-- KEYS: holders, queue, queue_exp. ARGV: id, channel. Returns 1 if it held or waited, else 0.
local held = redis.call('ZREM', KEYS[1], ARGV[1])
local waited = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if held > 0 and redis.call('ZCARD', KEYS[2]) > 0 then
  redis.call('PUBLISH', ARGV[2], 'free')
end
return held + waited
