-- Prepended to the scripts that read or grant leases (scripts.rs): Redis' clock, and the grace
-- after Redis lost the deployment's data.
--
-- KEYS[#KEYS] is the deployment's marker, set by the first script that runs on its data and kept
-- with it. Gone, Redis lost the data (restarted empty, flushed, failed over to a replica that
-- never had it) or the deployment starts for the first time — the two look alike. The leases of
-- calls still running are then missing from Redis until their replicas' heartbeats assert them
-- again, so the first script that finds the marker gone opens a grace of one lease TTL, in which
-- no new lease is granted (requests queue): a lease alive before would be renewed within a TTL,
-- as any lease must be to stay alive.

-- Redis' clock, in ms: never a replica's.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The ms left of the grace (0: none), and 1 if this call found the marker gone and opened it.
local function grace(marker, now, ttl)
  local ends = tonumber(redis.call('GET', marker))
  if ends then
    return math.max(ends - now, 0), 0
  end
  redis.call('SET', marker, now + ttl)
  return ttl, 1
end
