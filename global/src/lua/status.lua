-- How the global gate stands, live entries only. KEYS: holders, queue, queue_exp.
-- Returns {holders, waiting}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {redis.call('ZCOUNT', KEYS[1], now, '+inf'), redis.call('ZCOUNT', KEYS[3], now, '+inf')}
