/**
 * What the routing API records of each request when telemetry is on: a span named after its method and route, a
 * count and a duration by operation and status, and the problem's code when it answered one.
 *
 * @internal
 */
import type { MetricLabel, Runtime } from "effect"
import {
  Chunk,
  Clock,
  Context,
  DefaultServices,
  Effect,
  Exit,
  FiberRef,
  FiberRefs,
  HashMap,
  Metric,
  Option,
  Tracer
} from "effect"
import { labels, LATENCY_MILLIS, NO_STACK, timed } from "../telemetry.js"
import type * as Endpoints from "./endpoints.js"
import type * as Exchange from "./exchange.js"
import * as Runner from "./runner.js"

export const requests = Metric.counter("route_registry_requests_total", {
  description: "Requests answered by the routing API, by operation and status.",
  incremental: true
})

export const requestDuration = Metric.histogram(
  "route_registry_request_duration_ms",
  LATENCY_MILLIS,
  "Time the routing API took to answer a request, in milliseconds, by operation."
)

// Methods outside HTTP's own are one value, as OpenTelemetry's conventions ask, so a client cannot grow the
// metrics' labels without bound.
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"])

// Where a request is recorded, made once per method, route, operation and kind (a few dozen): its span's name,
// options and attributes, and its metrics' labels (the count's by status, as statuses are answered).
interface Site {
  readonly name: string
  readonly options: Tracer.SpanOptions & { readonly kind: Tracer.SpanKind }
  readonly attributes: ReadonlyArray<readonly [string, string]>
  readonly operation: string
  readonly duration: ReadonlyArray<MetricLabel.MetricLabel>
  readonly counts: Map<number, ReadonlyArray<MetricLabel.MetricLabel>>
}

// A request's sites: a server span without a parent, an internal one inside a host's own request span.
interface Sites {
  readonly server: Site
  readonly internal: Site
}

const siteOf = (method: string, route: string, operation: string, kind: "server" | "internal"): Site => {
  const attributes = { "http.request.method": method, "http.route": route, "route_registry.operation": operation }
  return {
    name: `${method} ${route}`,
    options: { ...NO_STACK, kind, attributes },
    attributes: Object.entries(attributes),
    operation,
    duration: labels("operation", operation),
    counts: new Map()
  }
}

// By route, operation and method, so that no key is built per request (a key joined from the three is a new string,
// hashed anew, each time).
const sites = new Map<string, Map<string, Map<string, Sites>>>()
const sitesOf = (method: string, route: string, operation: string): Sites => {
  let byOperation = sites.get(route)
  if (byOperation === undefined) sites.set(route, byOperation = new Map())
  let byMethod = byOperation.get(operation)
  if (byMethod === undefined) byOperation.set(operation, byMethod = new Map())
  let found = byMethod.get(method)
  if (found === undefined) {
    found = {
      server: siteOf(method, route, operation, "server"),
      internal: siteOf(method, route, operation, "internal")
    }
    byMethod.set(method, found)
  }
  return found
}

// Counts the answer in the metrics.
const counted = (site: Site, response: Exchange.Response, millis: number) => {
  let count = site.counts.get(response.status)
  if (count === undefined) {
    count = labels("operation", site.operation, "status", String(response.status))
    site.counts.set(response.status, count)
  }
  requests.unsafeUpdate(1, count)
  requestDuration.unsafeUpdate(millis, site.duration)
}

/**
 * `effect`, the answer of `operation` to `request` on `route` (the collection or one route's template), in a span
 * named after the method and route, as OpenTelemetry's HTTP conventions name a server span. It is a server span when
 * it has no parent, and an internal one inside a host's own request span.
 */
export const request: Endpoints.Instrument = (request, route, operation, effect) => {
  const method = KNOWN_METHODS.has(request.method) ? request.method : "_OTHER"
  const { internal, server } = sitesOf(method, route, operation)
  if (Exit.isExit(effect)) return givenAtOnce(internal, server, effect as Exit.Exit<Exchange.Response>)
  return Effect.flatMap(Effect.serviceOption(Tracer.ParentSpan), (parent) => {
    const site = Option.isSome(parent) ? internal : server
    return Effect.withSpan(
      timed(effect, (exit, millis) => {
        if (exit._tag === "Failure") return Effect.void
        counted(site, exit.value, millis)
        const code = exit.value.problem
        return Effect.annotateCurrentSpan({
          "http.response.status_code": exit.value.status,
          ...(code === undefined ? {} : { "route_registry.problem.code": code })
        })
      }),
      site.name,
      site.options
    )
  })
}

// What `Effect.makeSpan` reads of the fiber it runs on (the tracer, the clock, the parent span, the span annotations
// and links, whether tracing and its timing are on), read here of a fiber or of a runtime alike.
interface Tracing {
  readonly enabled: boolean
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly tracer: Tracer.Tracer
  readonly clock: Clock.Clock
  readonly timing: boolean
  readonly annotations: HashMap.HashMap<string, unknown>
  readonly links: ReadonlyArray<Tracer.SpanLink>
}

const tracingOf = (get: <A>(ref: FiberRef.FiberRef<A>) => A, context: Context.Context<never>): Tracing => {
  const services = get(DefaultServices.currentServices)
  return {
    enabled: get(FiberRef.currentTracerEnabled),
    parent: Context.getOption(context, Tracer.ParentSpan),
    tracer: Context.get(services, Tracer.Tracer),
    clock: Context.get(services, Clock.Clock),
    timing: get(FiberRef.currentTracerTimingEnabled),
    annotations: get(FiberRef.currentTracerSpanAnnotations),
    links: Chunk.toReadonlyArray(get(FiberRef.currentTracerSpanLinks))
  }
}

// A runtime's tracing, read once: an adapter answers on one runtime (a fiber it starts has the runtime's context).
let runtimeTracing: { readonly runtime: Runtime.Runtime<never>; readonly tracing: Tracing } | undefined
const tracingOfRuntime = (runtime: Runtime.Runtime<never>): Tracing => {
  if (runtimeTracing?.runtime !== runtime) {
    const tracing = tracingOf((ref) => FiberRefs.getOrDefault(runtime.fiberRefs, ref), runtime.context)
    runtimeTracing = { runtime, tracing }
  }
  return runtimeTracing.tracing
}

// The span's parent, as `Effect.makeSpan` takes it: the nearest span up the chain that does not disable propagation.
const propagating = (span: Option.Option<Tracer.AnySpan>): Option.Option<Tracer.AnySpan> =>
  Option.flatMap(span, (parent) =>
    Context.get(parent.context, Tracer.DisablePropagation)
      ? parent._tag === "Span" ? propagating(parent.parent) : Option.none()
      : Option.some(parent))

// The request's span and metrics of an answer given at once, its span made and ended around it as `Effect.makeSpan`
// and `Span.end` would (a disabled tracer records none). Its work took no measurable time.
const recorded = (
  tracing: Tracing,
  internal: Site,
  server: Site,
  exit: Exit.Exit<Exchange.Response>
): Exit.Exit<Exchange.Response> => {
  const site = Option.isSome(tracing.parent) ? internal : server
  if (Exit.isSuccess(exit)) counted(site, exit.value, 0)
  if (!tracing.enabled) return exit
  const span = tracing.tracer.span(
    site.name,
    propagating(tracing.parent),
    Context.empty(),
    tracing.links,
    tracing.timing ? tracing.clock.unsafeCurrentTimeNanos() : BigInt(0),
    site.options.kind,
    site.options
  )
  HashMap.forEach(tracing.annotations, (value, key) => span.attribute(key, value))
  for (const [key, value] of site.attributes) span.attribute(key, value)
  if (Exit.isSuccess(exit)) {
    span.attribute("http.response.status_code", exit.value.status)
    if (exit.value.problem !== undefined) span.attribute("route_registry.problem.code", exit.value.problem)
  }
  span.end(tracing.clock.unsafeCurrentTimeNanos(), exit)
  return exit
}

// An answer given at once (from memory, or refused before any wait) has nothing left to run inside its span, so the
// span is made and ended around it rather than made the parent of what runs: `withSpan` costs about 2.5 times as much
// (docs/performance.md, "The admin read path back"). An adapter's runner records it from its runtime, with no fiber
// (`Runner.withRuntime`); any other runs it on its fiber.
const givenAtOnce = (
  internal: Site,
  server: Site,
  exit: Exit.Exit<Exchange.Response>
): Effect.Effect<Exchange.Response> =>
  Runner.withRuntime(
    Effect.withFiberRuntime((fiber) =>
      recorded(tracingOf((ref) => fiber.getFiberRef(ref), fiber.currentContext), internal, server, exit)
    ),
    (runtime) => recorded(tracingOfRuntime(runtime), internal, server, exit)
  )
