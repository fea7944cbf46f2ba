-- How the global gate stands, live entries only. KEYS: holders, queue, queue_exp, marker, server,
-- history (grace.lua). ARGV: ttl_ms, the epoch and writes the replica saw last (grace.lua).
-- Returns {holders, waiting, grace_left_ms, opened, epoch, writes}: like any script, it opens the
-- grace if it is the first to find a loss (`opened`: why, 0 if it did not), and gives the
-- history's point (grace.lua); it counts no write of its own.
local now = now_ms()
local left, opened, epoch, writes = grace(KEYS[4], KEYS[5], KEYS[6], now, tonumber(ARGV[1]),
  tonumber(ARGV[2]), tonumber(ARGV[3]), false)
return {redis.call('ZCOUNT', KEYS[1], now, '+inf'), redis.call('ZCOUNT', KEYS[3], now, '+inf'),
  left, opened, epoch, writes}
