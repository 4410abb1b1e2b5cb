/**
 * The spans and metrics of the routing API: what a request, a store operation and the route table record, through
 * Effect's tracer and `Metric`s. Only ever called once a host has turned telemetry on (`Telemetry.layer`).
 *
 * @internal
 */
import type { Clock, Duration, Exit } from "effect"
import { Cause, Effect, Metric, MetricBoundaries, MetricLabel, Option, Tracer } from "effect"
import type * as Route from "../Route.js"
import type * as RouteRepository from "../RouteRepository.js"
import type * as Endpoints from "./http/endpoints.js"
import type * as Exchange from "./http/exchange.js"

// ---------------------------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------------------------

// From 10 µs (an answer from memory) to about 42 s, doubling.
const LATENCY_MILLIS = MetricBoundaries.exponential({ start: 0.01, factor: 2, count: 23 })

// From 1 ms (a notification) to about 36 minutes (an outage), doubling.
const LAG_MILLIS = MetricBoundaries.exponential({ start: 1, factor: 2, count: 22 })

export const requests = Metric.counter("route_registry_requests_total", {
  description: "Requests answered by the routing API, by operation and status.",
  incremental: true
})

export const requestDuration = Metric.histogram(
  "route_registry_request_duration_ms",
  LATENCY_MILLIS,
  "Time the routing API took to answer a request, in milliseconds, by operation."
)

export const storeOperationDuration = Metric.histogram(
  "route_registry_store_operation_duration_ms",
  LATENCY_MILLIS,
  "Time a store operation made by the routing API took, in milliseconds, by operation and outcome."
)

export const tableRoutes = Metric.gauge("route_registry_table_routes", {
  description: "Routes in the process's route table."
})

export const tableStaleness = Metric.gauge("route_registry_table_staleness_ms", {
  description: "How long ago the route table was last confirmed equal to the store, in milliseconds."
})

export const propagationLag = Metric.histogram(
  "route_registry_table_propagation_lag_ms",
  LAG_MILLIS,
  "Time from a route's creation in another process to its arrival in this process's table, in milliseconds."
)

// A metric finds its series at once when given the same array of labels again (it remembers them by identity), and
// builds a key to look it up otherwise: one array per combination of values, kept for the life of the process. The
// values come from short fixed lists (operations, statuses, error tags).
const series = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()

const labels = (...pairs: ReadonlyArray<string>): ReadonlyArray<MetricLabel.MetricLabel> => {
  const id = pairs.join("\n")
  const known = series.get(id)
  if (known !== undefined) return known
  const made: Array<MetricLabel.MetricLabel> = []
  for (let i = 0; i < pairs.length; i += 2) made.push(MetricLabel.make(pairs[i]!, pairs[i + 1]!))
  series.set(id, made)
  return made
}

// ---------------------------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------------------------

const elapsedMillis = (clock: Clock.Clock, start: bigint): number =>
  Number(clock.unsafeCurrentTimeNanos() - start) / 1_000_000

// Runs `effect`, then `done` with its exit and how long it took on Effect's `Clock`, inside the current span.
const timed = <A, E>(
  effect: Effect.Effect<A, E>,
  done: (exit: Exit.Exit<A, E>, millis: number) => Effect.Effect<void>
): Effect.Effect<A, E> =>
  Effect.clockWith((clock) => {
    const start = clock.unsafeCurrentTimeNanos()
    return Effect.onExit(effect, (exit) => done(exit, elapsedMillis(clock, start)))
  })

// ---------------------------------------------------------------------------------------------------------------
// Store operations
// ---------------------------------------------------------------------------------------------------------------

type Store = RouteRepository.RouteRepository["Type"]

type StoreOperation =
  | "create"
  | "findById"
  | "list"
  | "update"
  | "remove"
  | "createIdempotent"
  | "history"
  | "restore"
  | "applyBatch"

// "success", the tag of a declared error, or what else ended the operation.
const outcomeOf = (exit: Exit.Exit<unknown, unknown>): string => {
  if (exit._tag === "Success") return "success"
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const tag = (failure.value as { readonly _tag?: unknown } | null)?._tag
    return typeof tag === "string" ? tag : "failure"
  }
  return Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "defect"
}

// The spans capture no stack trace: it would point into this module, never at the host's code, and it took a third
// of the time of a traced request (measured).
const NO_STACK = { captureStackTrace: false } as const

// The store is called only once the span has started (a store may do its work when called, not when run).
const storeOperation = <A, E>(operation: StoreOperation, call: () => Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.withSpan(
    timed(Effect.suspend(call), (exit, millis) => {
      const outcome = outcomeOf(exit)
      storeOperationDuration.unsafeUpdate(millis, labels("operation", operation, "outcome", outcome))
      return Effect.annotateCurrentSpan("route_registry.store.outcome", outcome)
    }),
    `RouteRepository.${operation}`,
    { ...NO_STACK, kind: "internal", attributes: { "route_registry.store.operation": operation } }
  )

/**
 * `store` with a span and a duration per operation. It has no `unsafeFindById`, so every read goes through
 * `findById` and is seen.
 */
export const instrumentStore = (store: Store): Store => {
  const { applyBatch, createIdempotent, history, restore, unsafeFindById: _, ...rest } = store
  return {
    ...rest,
    create: (input, options) => storeOperation("create", () => store.create(input, options)),
    findById: (id) => storeOperation("findById", () => store.findById(id)),
    list: (query) => storeOperation("list", () => store.list(query)),
    update: (id, patch, precondition, options) =>
      storeOperation("update", () => store.update(id, patch, precondition, options)),
    remove: (id, precondition, options) => storeOperation("remove", () => store.remove(id, precondition, options)),
    ...(createIdempotent === undefined ? {} : {
      createIdempotent: (input, idempotency, options) =>
        storeOperation("createIdempotent", () => createIdempotent(input, idempotency, options))
    }),
    ...(history === undefined ? {} : { history: (query) => storeOperation("history", () => history(query)) }),
    ...(restore === undefined ? {} : {
      restore: (id, revision, precondition, options) =>
        storeOperation("restore", () => restore(id, revision, precondition, options))
    }),
    ...(applyBatch === undefined ? {} : {
      applyBatch: (operations, options) => storeOperation("applyBatch", () => applyBatch(operations, options))
    })
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------------------------

// Methods outside HTTP's own are one value, as OpenTelemetry's conventions ask, so a client cannot grow the
// metrics' labels without bound.
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"])

const answered = (operation: string, response: Exchange.Response, millis: number): Effect.Effect<void> => {
  const status = String(response.status)
  requests.unsafeUpdate(1, labels("operation", operation, "status", status))
  requestDuration.unsafeUpdate(millis, labels("operation", operation))
  const code = response.problem
  return Effect.annotateCurrentSpan({
    "http.response.status_code": response.status,
    ...(code === undefined ? {} : { "route_registry.problem.code": code })
  })
}

/**
 * `effect`, the answer of `operation` to `request` on `route` (the collection or one route's template), in a span
 * named after the method and route, as OpenTelemetry's HTTP conventions name a server span. It is a server span when
 * it has no parent, and an internal one inside a host's own request span.
 */
export const request: Endpoints.Instrument = (request, route, operation, effect) => {
  const method = KNOWN_METHODS.has(request.method) ? request.method : "_OTHER"
  const traced = timed(
    effect,
    (exit, millis) => exit._tag === "Success" ? answered(operation, exit.value, millis) : Effect.void
  )
  return Effect.flatMap(
    Effect.serviceOption(Tracer.ParentSpan),
    (parent) =>
      Effect.withSpan(traced, `${method} ${route}`, {
        ...NO_STACK,
        kind: Option.isSome(parent) ? "internal" : "server",
        attributes: { "http.request.method": method, "http.route": route, "route_registry.operation": operation }
      })
  )
}

// ---------------------------------------------------------------------------------------------------------------
// The route table
// ---------------------------------------------------------------------------------------------------------------

/** Sets the table's gauges now and every `interval`, for as long as it runs. */
export const sampleTable = (
  interval: Duration.Duration,
  size: () => number,
  stalenessMillis: () => number
): Effect.Effect<never> =>
  Effect.forever(Effect.zipRight(
    Effect.sync(() => {
      tableRoutes.unsafeUpdate(size(), [])
      tableStaleness.unsafeUpdate(stalenessMillis(), [])
    }),
    Effect.sleep(interval)
  ))

/**
 * Records the lag of a route new to the table that came from the change feed: the time since its `createdAt`, the
 * instant the creating process stamped it before writing it (so the write and commit are included, and any difference
 * between the two processes' clocks too).
 */
export const arrived = (clock: Clock.Clock) => (route: Route.StoredRoute): void =>
  propagationLag.unsafeUpdate(Math.max(0, clock.unsafeCurrentTimeMillis() - route.createdAt.getTime()), [])
