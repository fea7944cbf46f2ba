-- Prepended to the scripts that read or grant leases (scripts.rs): Redis' clock, and the grace
-- after Redis lost writes of the deployment.
--
-- Redis is the one record of the leases out. When it loses writes, the leases of calls still
-- running may be missing from it until their replicas' heartbeats assert them again, and
-- granting on that count would run up to twice the limit. So the first script that finds a loss
-- opens a grace of one lease TTL, in which no new lease is granted (requests queue): a lease alive
-- before would be renewed within a TTL, as any lease must be to stay alive. Three tests, each
-- giving `opened` its reason:
--
-- 1. The marker is set by the first script that runs on the deployment's data and kept with it.
--    Gone, Redis lost the data (restarted empty, flushed, failed over to a replica that never had
--    it) or the deployment starts for the first time — the two look alike.
-- 2. The server key keeps the run id of the Redis server that holds the data (`INFO server`).
--    Another server's id there means a restart (from an RDB or AOF snapshot, maybe older than the
--    last writes) or a failover (to a replica that may have lagged), whatever the data kept. A
--    Redis that refuses INFO to scripts leaves this test out.
-- 3. The history counts the scripts that wrote (`writes`, by acquire and heartbeat) within an
--    `epoch`. Every script passes the latest point of it its replica has seen (ARGV), and gets
--    the point after it back: Redis' history only moves on, so a replica that saw a later point
--    than Redis holds proves that Redis went back to older data — under the same run id (an older
--    RDB loaded in place, a master resynced from a replica that lagged and promoted again without
--    a restart). A replica that saw nothing passes 0, 0.
--
-- Each grace moves the epoch past every point seen (to Redis' time in ms, at least one past the
-- epoch the caller saw and Redis held), so the replicas that saw the lost writes find no loss in
-- them again: one loss, one grace.

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

-- Returns the ms left of the grace (0: none); why this call opened it (`opened`: 0 it did not,
-- else the test above that found the loss: 1 the marker gone, 2 another server, 3 an older
-- history); and the history's point after this call (epoch, writes), counting this call's writes
-- if `writes_too`. `seen_epoch`, `seen_writes`: the latest point the caller's replica saw.
local function grace(marker, server, history, now, ttl, seen_epoch, seen_writes, writes_too)
  local ends = tonumber(redis.call('GET', marker))
  local opened = 0
  if not ends then
    opened = 1
  end
  local id = run_id()
  if id then
    local known = redis.call('GET', server)
    if known ~= id then
      redis.call('SET', server, id)
      if known and opened == 0 then
        opened = 2
      end
    end
  end
  local point = redis.call('HMGET', history, 'epoch', 'writes')
  local epoch, writes = tonumber(point[1]) or 0, tonumber(point[2]) or 0
  if opened == 0 and (seen_epoch > epoch or (seen_epoch == epoch and seen_writes > writes)) then
    opened = 3
  end
  if opened > 0 then
    ends = now + ttl
    redis.call('SET', marker, ends)
    epoch = math.max(epoch + 1, seen_epoch + 1, now)
    redis.call('HSET', history, 'epoch', string.format('%.0f', epoch))
  end
  if writes_too then
    writes = redis.call('HINCRBY', history, 'writes', 1)
  end
  return math.max(ends - now, 0), opened, epoch, writes
end
