/**
 * What the route table records when telemetry is on: its size and staleness (gauges, set every
 * `tableSampleInterval`), and the lag of each route that reaches it from another process.
 *
 * @internal
 */
import type { Clock, Scope } from "effect"
import { Effect, Metric, MetricBoundaries, Schedule } from "effect"
import type * as Route from "../../Route.js"
import { Telemetry } from "../telemetry.js"

// From 1 ms (a notification) to about 36 minutes (an outage), doubling.
const LAG_MILLIS = MetricBoundaries.exponential({ start: 1, factor: 2, count: 22 })

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

const setGauges = (size: () => number, stalenessMillis: () => number) =>
  Effect.sync(() => {
    tableRoutes.unsafeUpdate(size(), [])
    tableStaleness.unsafeUpdate(stalenessMillis(), [])
  })

/** With telemetry on, sets the table's gauges now and every `tableSampleInterval`, for as long as the scope lives. */
export const sampleTable = (
  size: () => number,
  stalenessMillis: () => number
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.flatMap(Telemetry, (telemetry) =>
    telemetry === undefined ? Effect.void : Effect.asVoid(Effect.forkScoped(
      Effect.repeat(setGauges(size, stalenessMillis), Schedule.spaced(telemetry.tableSampleInterval))
    )))

/**
 * With telemetry on, what records the lag of a route new to the table that came from the change feed: the time since
 * its `createdAt`, the instant the creating process stamped it before writing it (so the write and commit are
 * included, and any difference between the two processes' clocks too).
 */
export const arrivals: Effect.Effect<((route: Route.StoredRoute) => void) | undefined> = Effect.flatMap(
  Telemetry,
  (telemetry) => telemetry === undefined ? Effect.succeed(undefined) : Effect.map(Effect.clock, arrived)
)

const arrived = (clock: Clock.Clock) => (route: Route.StoredRoute): void =>
  propagationLag.unsafeUpdate(Math.max(0, clock.unsafeCurrentTimeMillis() - route.createdAt.getTime()), [])
