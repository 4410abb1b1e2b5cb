import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Layer } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import { makeHost, type metricsView, type SpanView } from "../../examples/opentelemetry.js"
import { serveNode } from "../utils/adapters.js"
import { get, post, tokens } from "../utils/httpContract.js"

const named = (spans: ReadonlyArray<SpanView>, name: string): Array<SpanView> =>
  spans.filter((span) => span.name === name)

const valueOf = (
  points:
    | ReadonlyArray<{ readonly attributes: Readonly<Record<string, unknown>>; readonly value: unknown }>
    | undefined,
  attributes: Record<string, string>
): unknown =>
  points?.find((point) => Object.entries(attributes).every(([key, value]) => point.attributes[key] === value))?.value

type Metrics = ReturnType<typeof metricsView>

// Effect keeps its metrics per process, and a test process runs other files before this one: what these requests
// added is the difference from before them. A histogram's value counts its observations.
const added = (after: Metrics, before: Metrics, metric: string, attributes: Record<string, string>): number => {
  const count = (metrics: Metrics) => {
    const value = valueOf(metrics[metric], attributes)
    return typeof value === "object" && value !== null ? (value as { count: number }).count : Number(value ?? 0)
  }
  return count(after) - count(before)
}

describe("examples/opentelemetry", () => {
  it("the spans and metrics of a few requests reach OpenTelemetry's in-memory exporter and reader", async () => {
    const host = await makeHost(Layer.merge(RouteRepository.layerMemory, tokens), { tableSampleInterval: "10 millis" })
    const server = await serveNode(host.listener, host.dispose)
    onTestFinished(() => server.close())
    const before = await host.metrics()
    const created = await server.send(post({ method: "GET", path: "/users/:id", handler: "showUser" }))
    assert.strictEqual(created.status, 201)
    const id = created.json.id as string
    assert.strictEqual((await server.send(get(id))).status, 200)
    assert.strictEqual((await server.send(get(id, { authorization: "Bearer wrong" }))).status, 401)

    const spans = host.spans()
    const [create] = named(spans, "POST /v1/routing")
    assert.isDefined(create)
    assert.deepStrictEqual(create!.attributes, {
      "http.request.method": "POST",
      "http.route": "/v1/routing",
      "route_registry.operation": "create",
      "http.response.status_code": 201
    })
    const [stored] = named(spans, "RouteRepository.create")
    assert.strictEqual(stored?.parentSpanId, create!.spanId)
    const reads = named(spans, "GET /v1/routing/{id}")
    assert.deepStrictEqual(reads.map((span) => span.attributes["http.response.status_code"]), [200, 401])
    assert.strictEqual(reads[1]!.attributes["route_registry.problem.code"], "invalid_token")
    // A read of the memory store is a map's lookup, seen in the request's span (docs/observability.md): no store span.
    assert.deepStrictEqual(named(spans, "RouteRepository.findById"), [])

    const metrics = await host.metrics()
    const requests = "route_registry_requests_total"
    assert.strictEqual(added(metrics, before, requests, { operation: "create", status: "201" }), 1)
    assert.strictEqual(added(metrics, before, requests, { operation: "get", status: "200" }), 1)
    assert.strictEqual(added(metrics, before, requests, { operation: "get", status: "401" }), 1)
    assert.strictEqual(added(metrics, before, "route_registry_request_duration_ms", { operation: "get" }), 2)
    const store = { operation: "create", outcome: "success" }
    assert.strictEqual(added(metrics, before, "route_registry_store_operation_duration_ms", store), 1)
    // The table's gauge is sampled: within a few intervals it counts the route.
    let routes: unknown
    for (let tries = 0; tries < 100 && routes !== 1; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      routes = valueOf((await host.metrics())["route_registry_table_routes"], {})
    }
    assert.strictEqual(routes, 1)

    // The same, as a newcomer sees it.
    const shown = await fetch(`${server.origin}/telemetry`).then((response) => response.json())
    assert.deepStrictEqual(shown.spans.map((span: SpanView) => span.name).slice(0, 2), [
      "RouteRepository.create",
      "POST /v1/routing"
    ])
  })
})
