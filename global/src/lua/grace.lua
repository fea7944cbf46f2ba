-- Prepended to the scripts that read or grant leases (scripts.rs): Redis' clock, and the grace
-- after Redis lost the deployment's data.
--
-- The marker is set by the first script that runs on the deployment's data and kept with it.
-- Gone, Redis lost the data (restarted empty, flushed, failed over to a replica that never had
-- it) or the deployment starts for the first time — the two look alike. Redis may also have lost
-- only the last writes and kept the marker: restarted from an RDB or AOF snapshot taken before
-- them, or failed over to a replica that lagged. So the scripts also keep the run id of the
-- server that holds the data (`INFO server`); another server's id there means a restart or a
-- failover, whatever the data kept. Either way the leases of calls still running may be missing
-- from Redis until their replicas' heartbeats assert them again, so the first script that finds
-- out opens a grace of one lease TTL, in which no new lease is granted (requests queue): a lease
-- alive before would be renewed within a TTL, as any lease must be to stay alive. (A Redis that
-- refuses INFO to scripts leaves only the marker's test.)

-- Redis' clock, in ms: never a replica's.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- This server's run id, or nil where INFO is refused to scripts.
local function run_id()
  local ok, info = pcall(redis.call, 'INFO', 'server')
  if not ok or type(info) ~= 'string' then
    return nil
  end
  return string.match(info, 'run_id:(%x+)')
end

-- The ms left of the grace (0: none), and 1 if this call found the data gone, or on another
-- server than the one that wrote it, and opened it.
local function grace(marker, server, now, ttl)
  local ends = tonumber(redis.call('GET', marker))
  local id = run_id()
  if id then
    local known = redis.call('GET', server)
    if known ~= id then
      redis.call('SET', server, id)
      if known then
        ends = nil
      end
    end
  end
  if ends then
    return math.max(ends - now, 0), 0
  end
  redis.call('SET', marker, now + ttl)
  return ttl, 1
end
