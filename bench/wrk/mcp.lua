-- wrk script: POSTs prepared MCP requests, one after another, each with its own caller token.
--
--   wrk -s bench/wrk/mcp.lua URL -- REQUESTS_FILE
--
-- REQUESTS_FILE has one request a line: "<Mcp-Name>\t<token>\t<JSON body>". Every thread walks the
-- list from its own starting point, so tokens (callers) rotate with every request. A response
-- counts as failed unless it is HTTP 200 with neither a JSON-RPC error nor "isError":true; done()
-- prints one line "BENCH_JSON {...}" with the counts and the latency percentiles in microseconds.

local threads = {}
local counter = 1

function setup(thread)
  thread:set("id", counter)
  table.insert(threads, thread)
  counter = counter + 1
end

function init(args)
  local path = wrk.path
  requests = {}
  for line in io.lines(args[1]) do
    local name, token, body = line:match("^([^\t]*)\t([^\t]*)\t(.*)$")
    local headers = {
      ["Content-Type"] = "application/json",
      ["Accept"] = "application/json, text/event-stream",
      ["MCP-Protocol-Version"] = "2026-07-28",
      ["Mcp-Method"] = "tools/call",
      ["Mcp-Name"] = name,
      ["Authorization"] = "Bearer " .. token,
    }
    table.insert(requests, wrk.format("POST", path, headers, body))
  end
  position = (id * 7919) % #requests
  failed = 0
end

function request()
  position = position % #requests + 1
  return requests[position]
end

function response(status, headers, body)
  if status ~= 200 or body:find('"isError":true', 1, true) or body:find('"error":{', 1, true) then
    failed = failed + 1
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("failed")
  end
  local errors = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"failed_responses":%d,"connect_errors":%d,' ..
    '"read_errors":%d,"write_errors":%d,"timeouts":%d,"status_errors":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, bad, errors.connect, errors.read, errors.write, errors.timeout,
    errors.status, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean))
end
