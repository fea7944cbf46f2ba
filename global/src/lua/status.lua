-- How the global gate stands, live entries only. KEYS: holders, queue, queue_exp, marker, server
-- (grace.lua). ARGV: ttl_ms.
-- Returns {holders, waiting, grace_left_ms, opened}: like any script, it opens the grace if it is
-- the first to find the deployment's data gone (`opened` 1).
local now = now_ms()
local left, opened = grace(KEYS[4], KEYS[5], now, tonumber(ARGV[1]))
return {redis.call('ZCOUNT', KEYS[1], now, '+inf'), redis.call('ZCOUNT', KEYS[3], now, '+inf'),
  left, opened}
