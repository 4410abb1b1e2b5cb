/**
 * What the routing API records of each request when telemetry is on: a span named after its method and route, a
 * count and a duration by operation and status, and the problem's code when it answered one.
 *
 * @internal
 */
import { Effect, Exit, Metric, Option, Tracer } from "effect"
import { labels, LATENCY_MILLIS, NO_STACK, timed } from "../telemetry.js"
import type * as Endpoints from "./endpoints.js"
import type * as Exchange from "./exchange.js"

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

// Counts the answer and gives the attributes its span takes.
const answered = (operation: string, response: Exchange.Response, millis: number): Record<string, unknown> => {
  const status = String(response.status)
  requests.unsafeUpdate(1, labels("operation", operation, "status", status))
  requestDuration.unsafeUpdate(millis, labels("operation", operation))
  const code = response.problem
  return {
    "http.response.status_code": response.status,
    ...(code === undefined ? {} : { "route_registry.problem.code": code })
  }
}

/**
 * `effect`, the answer of `operation` to `request` on `route` (the collection or one route's template), in a span
 * named after the method and route, as OpenTelemetry's HTTP conventions name a server span. It is a server span when
 * it has no parent, and an internal one inside a host's own request span.
 */
export const request: Endpoints.Instrument = (request, route, operation, effect) => {
  const method = KNOWN_METHODS.has(request.method) ? request.method : "_OTHER"
  return Effect.flatMap(Effect.serviceOption(Tracer.ParentSpan), (parent) => {
    const name = `${method} ${route}`
    const options = {
      ...NO_STACK,
      kind: Option.isSome(parent) ? "internal" : "server",
      attributes: { "http.request.method": method, "http.route": route, "route_registry.operation": operation }
    } as const
    return Exit.isExit(effect) ?
      givenAtOnce(name, options, operation, effect as Exit.Exit<Exchange.Response>) :
      Effect.withSpan(
        timed(
          effect,
          (exit, millis) =>
            exit._tag === "Success" ? Effect.annotateCurrentSpan(answered(operation, exit.value, millis)) : Effect.void
        ),
        name,
        options
      )
  })
}

// An answer given at once (from memory, or refused before any wait) has nothing left to run inside its span, so the
// span is made and ended around it rather than made the parent of what runs: `withSpan` costs about 2.5 times as much
// (docs/performance.md, "The admin read path back"). Its work took no measurable time.
const givenAtOnce = (
  name: string,
  options: Tracer.SpanOptions,
  operation: string,
  exit: Exit.Exit<Exchange.Response>
): Effect.Effect<Exchange.Response> =>
  Effect.flatMap(Effect.makeSpan(name, options), (span) =>
    Effect.clockWith((clock) => {
      if (Exit.isSuccess(exit)) {
        for (const [key, value] of Object.entries(answered(operation, exit.value, 0))) span.attribute(key, value)
      }
      span.end(clock.unsafeCurrentTimeNanos(), exit)
      return exit
    }))
