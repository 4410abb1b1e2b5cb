/**
 * The routing API's traces and metrics in OpenTelemetry, through `@effect/opentelemetry`: the host installs its SDK
 * as a layer and turns the library's telemetry on with `Telemetry.layer()`. Here the spans go to an in-memory
 * exporter and the metrics to a reader collected on demand, both shown at /telemetry; a real host puts its OTLP
 * exporter (or Prometheus reader) in their place.
 *
 *   npx tsx examples/opentelemetry.ts    # PORT (default 3005), HOST, ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS
 *   curl -X POST localhost:3005/v1/routing -H "authorization: Bearer $TOKEN" -H "content-type: application/json" \
 *     -d '{"method":"GET","path":"/users/:id","handler":"showUser"}'
 *   curl localhost:3005/telemetry        # the spans ended so far and the metrics now
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { MetricReader, type ResourceMetrics } from "@opentelemetry/sdk-metrics"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Layer, ManagedRuntime } from "effect"
import type * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as RouteTable from "route-registry/RouteTable"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import * as Telemetry from "route-registry/Telemetry"
import * as Env from "./env.js"

/** A reader whose metrics are read when asked for, as a Prometheus scrape reads them. */
class OnDemandReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve()
  }
}

/** A span as /telemetry shows it. */
export interface SpanView {
  readonly name: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly attributes: Readonly<Record<string, unknown>>
}

const spanView = (span: ReadableSpan): SpanView => ({
  name: span.name,
  spanId: span.spanContext().spanId,
  parentSpanId: span.parentSpanContext?.spanId,
  attributes: span.attributes
})

type Point = { readonly attributes: Readonly<Record<string, unknown>>; readonly value: unknown }

// A histogram's value without its buckets: how many, their sum, the least and the most.
const pointView = ({ attributes, value }: { attributes: Record<string, unknown>; value: unknown }): Point => {
  if (typeof value !== "object" || value === null) return { attributes, value }
  const { count, max, min, sum } = value as { count: number; sum: number; min: number; max: number }
  return { attributes, value: { count, sum, min, max } }
}

/** The route-registry metrics of a collection, by name: their data points' attributes and values. */
export const metricsView = (collected: ResourceMetrics): Record<string, Array<Point>> =>
  Object.fromEntries(
    collected.scopeMetrics.flatMap((scope) => scope.metrics)
      .filter((metric) => metric.descriptor.name.startsWith("route_registry_"))
      .map((metric) => [metric.descriptor.name, metric.dataPoints.map(pointView)])
  )

/**
 * The routing API over `services` (the store under a route table, and an authenticator), with OpenTelemetry
 * installed and telemetry on (with `options`); `spans` and `metrics` read what it recorded, and `listener` also
 * serves /telemetry.
 */
export const makeHost = async <E>(
  services: Layer.Layer<RoutingHandler.Services, E>,
  options?: Telemetry.Options
) => {
  const exporter = new InMemorySpanExporter()
  const reader = new OnDemandReader()
  const openTelemetry = NodeSdk.layer(() => ({
    resource: { serviceName: "route-registry-example" },
    spanProcessor: new SimpleSpanProcessor(exporter),
    metricReader: reader
  }))
  // Telemetry.layer where the table is built (its gauges) and where the routing API is built (its spans).
  const telemetry = Telemetry.layer(options)
  const runtime = ManagedRuntime.make(
    RouteTable.layer.pipe(
      Layer.provideMerge(services),
      Layer.provideMerge(telemetry),
      Layer.provideMerge(openTelemetry)
    )
  )
  const routing = await runtime.runPromise(AdminListener.make()).catch(async (error: unknown) => {
    await runtime.dispose()
    throw error
  })
  const spans = (): Array<SpanView> => exporter.getFinishedSpans().map(spanView)
  const metrics = async () => metricsView((await reader.collect()).resourceMetrics)
  const listener = (req: Http.IncomingMessage, res: Http.ServerResponse) =>
    routing(req, res, () => {
      if (req.url !== "/telemetry") return res.writeHead(404).end()
      metrics().then((metrics) =>
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ spans: spans(), metrics }))
      )
    })
  return { listener, spans, metrics, dispose: () => runtime.dispose() }
}

if (Env.isMain(import.meta.url)) {
  const { dispose, listener } = await makeHost(Env.services())
  Env.serve(listener, 3005, dispose)
}
