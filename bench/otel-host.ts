/**
 * A host for `bench/otel.ts`: the library's Node router on `node:http`, serving the GitHub routes with a trivial JSON
 * handler. `OTEL=sdk` registers OpenTelemetry's Node SDK (spans batched to an exporter that drops them, a metric
 * reader) and `@opentelemetry/instrumentation-http` first, as an instrumented host does. `NAMING` picks what the
 * library is, through one loader hook that every variant registers (so all run the same loader machinery): `on`, the
 * built library as it is; `off`, the library kept from `@opentelemetry/api` (its import refused from the library's
 * OpenTelemetry module), so it names nothing; `toggle`, the built library naming or not as the parent says
 * (`"naming on"`, `"naming off"`: one flag read where the library checks for `@opentelemetry/api`), so that one process
 * can be measured both ways, and a third: the host's handler naming the route itself (`"naming by hand"`, as an expert
 * host would, through the HTTP instrumentation's RPC metadata); `stripped`, a build with no telemetry code in the
 * router (the router's two OpenTelemetry lines cut from `dist/RouterListener.js` as it loads). The host fails if the
 * lines it cuts or changes are not there. It tells
 * its parent its port over IPC, answers `"cpu"` with the process's CPU time in microseconds, and profiles itself
 * between `"profile"` and `"stop"` (below).
 */
import * as Fs from "node:fs"
import * as Inspector from "node:inspector"
import { createRequire, register } from "node:module"

const naming = process.env.NAMING ?? "on"
const hook = `const naming = ${JSON.stringify(naming)}
const edits = {
  "/dist/RouterListener.js": naming === "stripped" &&
    [["yield* Effect.promise(Otel.load);", ""], ["Otel.nameServerSpan(req.method, found.route);", ""]],
  "/dist/internal/router/otel.js": naming === "toggle" &&
    [["if (api === undefined)\\n        return undefined;\\n    const metadata",
      "if (api === undefined || globalThis[Symbol.for('bench/otel/off')])\\n        return undefined;\\n    const metadata"]]
}
export async function resolve(specifier, context, next) {
  if (naming === "off" && specifier === "@opentelemetry/api" && context.parentURL?.endsWith("/internal/router/otel.js"))
    throw new Error("blocked by the benchmark")
  return next(specifier, context)
}
export async function load(url, context, next) {
  const loaded = await next(url, context)
  const file = Object.keys(edits).find((file) => url.endsWith(file))
  if (file === undefined || !edits[file]) return loaded
  let source = String(loaded.source)
  for (const [from, to] of edits[file]) {
    if (!source.includes(from)) throw new Error("bench/otel-host.ts: " + file + " has no " + JSON.stringify(from))
    source = source.replace(from, to)
  }
  return { ...loaded, source }
}`
register(`data:text/javascript,${encodeURIComponent(hook)}`)

const require = createRequire(import.meta.url)

async function handNaming() {
  const { context } = await import("@opentelemetry/api")
  const { getRPCMetadata, RPCType } = await import("@opentelemetry/core")
  return (route: { readonly path: string; readonly id: string }) => {
    const metadata = getRPCMetadata(context.active())
    if (metadata?.type !== RPCType.HTTP) return
    metadata.route = route.path
    metadata.span.setAttribute("route_registry.route.id", route.id)
  }
}

if (process.env.OTEL === "sdk") {
  const { metrics } = await import("@opentelemetry/api")
  const { HttpInstrumentation } = await import("@opentelemetry/instrumentation-http")
  const { MeterProvider, MetricReader } = await import("@opentelemetry/sdk-metrics")
  const { BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base")
  const { NodeTracerProvider } = await import("@opentelemetry/sdk-trace-node")
  class Reader extends MetricReader {
    protected override onForceFlush() {
      return Promise.resolve()
    }
    protected override onShutdown() {
      return Promise.resolve()
    }
  }
  const dropping = {
    export: (_: unknown, done: (result: { code: 0 }) => void) => done({ code: 0 }),
    shutdown: () => Promise.resolve()
  }
  new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] }).register()
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new Reader()] }))
  new HttpInstrumentation()
  require("node:http")
}

const http = require("node:http") as typeof import("node:http")
const { Effect, Layer, ManagedRuntime, Schema } = await import("effect")
const RouterListener = await import("route-registry/RouterListener")
const Route = await import("route-registry/Route")
const RouteRepository = await import("route-registry/RouteRepository")
const RouteTable = await import("route-registry/RouteTable")
const Scenario = await import("./router.js")

const routes = Scenario.routes(10_000, "github")
const runtime = ManagedRuntime.make(RouteTable.layer.pipe(Layer.provideMerge(RouteRepository.layerMemory)))
await runtime.runPromise(
  Effect.flatMap(
    RouteRepository.RouteRepository,
    (repository) =>
      Effect.forEach(routes, (route) => repository.create(Schema.decodeUnknownSync(Route.CreateRoute)(route)))
  ).pipe(Effect.orDie)
)
// `naming by hand`: the library names nothing and the handler names the route as an expert host would by itself, the
// way the framework instrumentations do (the HTTP instrumentation's RPC metadata), with the route's id on the span: the
// same span name, attributes and metric points as the library gives, so the two differ only in who writes them.
let byHand = false
const nameByHand = process.env.OTEL === "sdk" ? await handNaming() : () => {}
const handler: import("route-registry/RouterListener").RouteFunction = (req, res) => {
  const { params, route } = RouterListener.matchOf(req)!
  if (byHand) nameByHand(route)
  const body = Scenario.answer(route.handler, params)
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}
const router = await runtime.runPromise(
  RouterListener.make({ handlers: Object.fromEntries(routes.map((route) => [route.handler, handler])) })
)
const server = http.createServer((req, res) => router(req, res))
server.listen(0, "127.0.0.1", () => {
  process.send!({ port: (server.address() as import("node:net").AddressInfo).port })
})
// `CPU_PROFILE=<file>`: V8's profile of what the host does between the parent's `"profile"` and `"stop"` (its
// measured passes), written to that file, for DevTools or any `.cpuprofile` reader.
const profiler = new Inspector.Session()
const profile = () => {
  profiler.connect()
  // A sample every 100 µs: a pass of the 1,223 routes is a few tenths of a second.
  profiler.post("Profiler.enable", () =>
    profiler.post(
      "Profiler.setSamplingInterval",
      { interval: 100 },
      () => profiler.post("Profiler.start", () => process.send!({ profiling: true }))
    ))
}
const stop = () =>
  profiler.post("Profiler.stop", (error, result) => {
    if (error === null) Fs.writeFileSync(process.env.CPU_PROFILE!, JSON.stringify(result.profile))
    process.send!({ stopped: error === null })
  })
process.on("message", (message) => {
  if (message === "profile") return profile()
  if (message === "stop") return stop()
  if (message === "naming on" || message === "naming off" || message === "naming by hand") {
    ;(globalThis as Record<symbol, unknown>)[Symbol.for("bench/otel/off")] = message !== "naming on"
    byHand = message === "naming by hand"
  }
  const { system, user } = process.cpuUsage()
  process.send!({ cpu: user + system })
})
