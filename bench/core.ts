/**
 * The HTTP core alone, no socket: CPU per request of the admin API's create or get by id over the memory store, as
 * `RoutingHandler.handle` answers it. `npm run bench:core [-- --op create|get] [--rounds R] [--requests N] [--alloc]
 * [--telemetry]`.
 *
 * The compiled library in dist/ (run `npm run build` first; the npm script does), one process: a handler built on a
 * route table over the memory store with a static token, as `npm start` builds it, called in a loop with one request
 * at a time. Each round times N requests (default 20,000) with `process.cpuUsage` after a warm-up of one round; the
 * median of R rounds (default 7) is reported with their spread. A create posts a new path each time; a get reads one
 * of 1,000 routes created beforehand. Being CPU time, it moves less with the machine's load than a rate does, but
 * compare builds by alternating them in rounds all the same.
 *
 * `--alloc` reports instead the bytes a request allocates, by function: V8's sampling heap profiler (through
 * `node:inspector`) over N requests after the warm-up, counting the objects the collector has already freed too.
 * `--telemetry` turns the library's telemetry on (`Telemetry.layer()`: spans on Effect's own tracer, the metrics).
 */
import { Effect, Exit, Fiber, Layer, ManagedRuntime, Redacted } from "effect"
import { Session } from "node:inspector/promises"
import * as Authenticator from "route-registry/Authenticator"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as RoutingHandler from "route-registry/RoutingHandler"
import * as Telemetry from "route-registry/Telemetry"
// The adapters' runner is internal: the compiled one, which knows the Effects the compiled core marks for it.
import * as Runner from "../dist/internal/http/runner.js"

const argv = process.argv.slice(2)
const argument = (name: string): string | undefined => {
  const i = argv.indexOf(name)
  return i === -1 ? undefined : argv[i + 1]
}
const count = (name: string, fallback: number) => {
  const value = Number(argument(name) ?? fallback)
  if (!(Number.isSafeInteger(value) && value > 0)) throw new Error(`${name} needs a positive whole number`)
  return value
}
const OP = argument("--op") ?? "create"
if (OP !== "create" && OP !== "get") throw new Error("--op is create or get")
const ROUNDS = count("--rounds", 7)
const REQUESTS = count("--requests", 20_000)
const ALLOC = argv.includes("--alloc")
const TELEMETRY = argv.includes("--telemetry")

const layer = RouteTable.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(
    RouteRepository.layerMemory,
    Authenticator.layerStaticTokens([{ token: Redacted.make("bench-token"), scopes: ["routes:read", "routes:write"] }]),
    TELEMETRY ? Telemetry.layer() : Layer.empty
  ))
)
const runtime = ManagedRuntime.make(layer)
const handler = await runtime.runPromise(RoutingHandler.make())

const encoder = new TextEncoder()
const request = (method: string, path: string, body?: string): RoutingHandler.Request => {
  const bytes = body === undefined ? undefined : encoder.encode(body)
  return {
    method,
    path,
    query: "",
    header: (name) =>
      name === "authorization"
        ? "Bearer bench-token"
        : bytes === undefined
        ? undefined
        : name === "content-type"
        ? "application/json"
        : name === "content-length"
        ? String(bytes.length)
        : undefined,
    body: () => Effect.succeed(bytes ?? new Uint8Array(0))
  }
}

// Run as the library's adapters run it: started at once on an immediate scheduler, an Exit when nothing waited.
const start = Runner.make(await runtime.runtime())
const answer = async (req: RoutingHandler.Request): Promise<RoutingHandler.Response> => {
  const effect = handler.handle(req)
  if (effect === undefined) throw new Error(`no answer for ${req.method} ${req.path}`)
  const started = start(effect)
  const exit = Exit.isExit(started) ? started : await Effect.runPromise(Fiber.await(started))
  if (Exit.isFailure(exit)) throw new Error(`${req.method} ${req.path} failed`)
  const response = exit.value
  if (response.status >= 300) throw new Error(`${req.method} ${req.path}: ${response.status} ${response.body}`)
  return response
}

let serial = 0
const create = () =>
  request(
    "POST",
    "/v1/routing",
    JSON.stringify({
      method: "GET",
      path: `/bench/${serial++}/:id`,
      middleware: ["auth", "log"],
      handler: "BenchController#show"
    })
  )

const ids: Array<string> = []
for (let i = 0; i < 1_000 && OP === "get"; i++) ids.push(JSON.parse((await answer(create())).body).id)
const next = OP === "create" ? create : () => request("GET", `/v1/routing/${ids[serial++ % ids.length]}`)

/** CPU microseconds per request over `REQUESTS` requests. */
const round = async (): Promise<number> => {
  const start = process.cpuUsage()
  for (let i = 0; i < REQUESTS; i++) await answer(next())
  const used = process.cpuUsage(start)
  return (used.user + used.system) / REQUESTS
}

interface SamplingNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<SamplingNode>
}

// Bytes allocated by each function (its own allocations, not its callees'), summed over the profile's tree.
const bytesByFunction = (node: SamplingNode, into = new Map<string, number>()): Map<string, number> => {
  const { functionName, lineNumber, url } = node.callFrame
  const name = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`
  into.set(name, (into.get(name) ?? 0) + node.selfSize)
  for (const child of node.children) bytesByFunction(child, into)
  return into
}

/** The bytes `REQUESTS` requests allocate, by function, sampled every 256 bytes, freed objects included. */
const allocations = async (): Promise<Map<string, number>> => {
  const session = new Session()
  session.connect()
  await session.post("HeapProfiler.enable")
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 256,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  })
  for (let i = 0; i < REQUESTS; i++) await answer(next())
  const { profile } = await session.post("HeapProfiler.stopSampling")
  session.disconnect()
  return bytesByFunction(profile.head as SamplingNode)
}

const reportAllocations = (bytes: Map<string, number>) => {
  const total = [...bytes.values()].reduce((sum, n) => sum + n, 0)
  console.log(`${OP}: ${Math.round(total / REQUESTS)} bytes allocated per request (${REQUESTS} requests), by function:`)
  for (const [name, n] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
    console.log(`${String(Math.round(n / REQUESTS)).padStart(7)}  ${name}`)
  }
}

const reportCpu = (results: ReadonlyArray<number>) => {
  const sorted = [...results].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)]!
  console.log(
    `${OP}${TELEMETRY ? " (telemetry on)" : ""}: ${
      median.toFixed(1)
    } µs CPU per request (median of ${ROUNDS} rounds of ${REQUESTS}; ` +
      `min ${sorted[0]!.toFixed(1)}, max ${sorted[sorted.length - 1]!.toFixed(1)}; ` +
      `rounds ${results.map((r) => r.toFixed(1)).join(" ")})`
  )
}

await round()
if (ALLOC) {
  reportAllocations(await allocations())
} else {
  const results: Array<number> = []
  for (let i = 0; i < ROUNDS; i++) results.push(await round())
  reportCpu(results)
}
await runtime.dispose()
