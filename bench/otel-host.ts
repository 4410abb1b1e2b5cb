/**
 * A host for `bench/otel.ts`: the library's Node router on `node:http`, serving the GitHub routes with a trivial JSON
 * handler. `OTEL=sdk` registers OpenTelemetry's Node SDK (spans batched to an exporter that drops them, a metric
 * reader) and `@opentelemetry/instrumentation-http` first, as an instrumented host does. `NAMING=off` keeps
 * `@opentelemetry/api` from the library alone (a loader hook refuses its import from the library's OpenTelemetry
 * module), so the library names nothing, as before it named routes. It tells its parent its port over IPC and answers
 * `"cpu"` with the process's CPU time in microseconds.
 */
import { createRequire, register } from "node:module"

if (process.env.NAMING === "off") {
  const hook = "export async function resolve(specifier, context, next) {" +
    "if (specifier === '@opentelemetry/api' && context.parentURL?.endsWith('/internal/router/otel.js'))" +
    " throw new Error('blocked by the benchmark'); return next(specifier, context) }"
  register(`data:text/javascript,${encodeURIComponent(hook)}`)
}

const require = createRequire(import.meta.url)

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
const handler: import("route-registry/RouterListener").RouteFunction = (req, res) => {
  const { params, route } = RouterListener.matchOf(req)!
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
process.on("message", () => {
  const { system, user } = process.cpuUsage()
  process.send!({ cpu: user + system })
})
