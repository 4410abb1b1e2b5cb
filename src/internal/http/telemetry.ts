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

// Counts the answer in the metrics.
const counted = (operation: string, response: Exchange.Response, millis: number) => {
  requests.unsafeUpdate(1, labels("operation", operation, "status", String(response.status)))
  requestDuration.unsafeUpdate(millis, labels("operation", operation))
}

// The span's options for a request: one object per method, route, operation and kind, made once (a few dozen).
const spanOptions = new Map<string, Tracer.SpanOptions>()
const optionsOf = (method: string, route: string, operation: string, kind: "server" | "internal") => {
  const key = `${method} ${route} ${operation} ${kind}`
  let options = spanOptions.get(key)
  if (options === undefined) {
    options = {
      ...NO_STACK,
      kind,
      attributes: { "http.request.method": method, "http.route": route, "route_registry.operation": operation }
    }
    spanOptions.set(key, options)
  }
  return options
}

/**
 * `effect`, the answer of `operation` to `request` on `route` (the collection or one route's template), in a span
 * named after the method and route, as OpenTelemetry's HTTP conventions name a server span. It is a server span when
 * it has no parent, and an internal one inside a host's own request span.
 */
export const request: Endpoints.Instrument = (request, route, operation, effect) => {
  const method = KNOWN_METHODS.has(request.method) ? request.method : "_OTHER"
  const name = `${method} ${route}`
  return Effect.flatMap(Effect.serviceOption(Tracer.ParentSpan), (parent) => {
    const options = optionsOf(method, route, operation, Option.isSome(parent) ? "internal" : "server")
    return Exit.isExit(effect)
      ? givenAtOnce(name, options, operation, effect as Exit.Exit<Exchange.Response>)
      : Effect.withSpan(
        timed(effect, (exit, millis) => {
          if (exit._tag === "Failure") return Effect.void
          counted(operation, exit.value, millis)
          const code = exit.value.problem
          return Effect.annotateCurrentSpan({
            "http.response.status_code": exit.value.status,
            ...(code === undefined ? {} : { "route_registry.problem.code": code })
          })
        }),
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
        counted(operation, exit.value, 0)
        span.attribute("http.response.status_code", exit.value.status)
        if (exit.value.problem !== undefined) span.attribute("route_registry.problem.code", exit.value.problem)
      }
      span.end(clock.unsafeCurrentTimeNanos(), exit)
      return exit
    }))
