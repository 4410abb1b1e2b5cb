-- wrk load for the routing API. Arguments after `--`: the mode (get, post or mix: 90% get, 10% post; router: the
-- router scenario's requests), a file of route ids to get (one a line; "-" for none) or, for router, of requests
-- ("METHOD path", one a line), the bearer token, and a prefix that makes the paths this run creates unique (a
-- created path is "/<prefix>/<n>/:id", a shape of its own). `done` prints one line, "BENCH {json}".

local mode, token, prefix
local ids = {}
local count = 0
-- The router scenario's requests, formatted once.
local routed = {}
local created = 0
local get_headers, post_headers

function init(args)
  mode, token, prefix = args[1], args[3], args[4]
  if args[2] ~= "-" then
    for line in io.lines(args[2]) do
      if line ~= "" then ids[#ids + 1] = line end
    end
  end
  count = #ids
  if mode == "router" then
    for i, line in ipairs(ids) do
      local method, path = line:match("^(%S+) (%S+)$")
      routed[i] = wrk.format(method, path)
    end
  end
  get_headers = { ["Authorization"] = "Bearer " .. token }
  post_headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
  math.randomseed(os.time())
end

local function get()
  return wrk.format("GET", "/v1/routing/" .. ids[math.random(count)], get_headers)
end

local function post()
  created = created + 1
  return wrk.format("POST", "/v1/routing", post_headers,
    '{"method":"GET","path":"/' .. prefix .. '/' .. created ..
    '/:id","middleware":["auth","log"],"handler":"BenchController#create"}')
end

function request()
  if mode == "router" then return routed[math.random(count)] end
  if mode == "get" or (mode == "mix" and math.random() < 0.9) then return get() end
  return post()
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
