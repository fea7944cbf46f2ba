-- wrk script: POST a question mix to /retrieve, bodies taken in turn from a file of JSON bodies,
-- one per line (the format of `turnstile load --bodies`; blank lines skipped).
--
--   wrk -t2 -c16 -d20s -s loadtest/mix.lua http://127.0.0.1:8080/retrieve -- bench/mix.jsonl
--
-- Each wrk thread runs its own copy of this script and walks the whole file in turn, thread i
-- starting 37·i lines further on, so every line is sent equally often and the threads do not
-- send the same question at the same moment. At the end it prints the status counts (wrk itself
-- reports only non-2xx, as one number).

local bodies = {}
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  local path = args[1] or "bench/mix.jsonl"
  local file = assert(io.open(path, "r"), "cannot open " .. path)
  for line in file:lines() do
    if line:match("%S") then
      table.insert(bodies, line)
    end
  end
  file:close()
  assert(#bodies > 0, path .. " has no body")
  next_index = ((id or 0) * 37) % #bodies
  statuses = {}
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  local body = bodies[next_index + 1]
  next_index = (next_index + 1) % #bodies
  return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  io.write("statuses:")
  for _, thread in ipairs(threads) do
    local counts = thread:get("statuses")
    for status, n in pairs(counts) do
      io.write(string.format(" %s=%d", status, n))
    end
  end
  io.write("\n")
end
