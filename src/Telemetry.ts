/**
 * Traces and metrics of the routing API, through Effect's own tracer and `Metric`s, so whatever the host installed
 * (`@effect/opentelemetry`, another `Tracer`, a metrics reader over Effect's registry) sees them.
 *
 * Telemetry is off unless the host provides `layer` where the routing API is built (and where `RouteTable.layer` is
 * built, for the table's gauges). Off, a request costs nothing more: no span, no clock read, no fiber. On:
 *
 * - a span per request to the routing API, named `<method> <route>` (`GET /v1/routing/{id}`), with the attributes
 *   `http.request.method`, `http.route`, `http.response.status_code`, `route_registry.operation` and, when the answer is
 *   a problem, `route_registry.problem.code`;
 * - inside it, a span per store operation, `RouteRepository.<operation>`, with `route_registry.store.operation` and
 *   `route_registry.store.outcome` (`success` or the tag of the error);
 * - the metrics below.
 *
 * @since 0.3.0
 */
import { Duration, Layer } from "effect"
import * as Requests from "./internal/http/telemetry.js"
import * as Store from "./internal/store/telemetry.js"
import * as Table from "./internal/table/telemetry.js"
import * as Internal from "./internal/telemetry.js"
import type * as RouteRepository from "./RouteRepository.js"

// The switch is defined below every layer, so that the route table and the HTTP core read it without this module,
// which gathers the measures of every layer.
export {
  /**
   * Whether telemetry is on, and how: `undefined` (the default) is off.
   *
   * @since 0.3.0
   * @category tags
   */
  Telemetry
} from "./internal/telemetry.js"

/**
 * @since 0.3.0
 * @category models
 */
export type Config = Internal.Config

/**
 * @since 0.3.0
 * @category models
 */
export interface Options {
  /** How often the route table's gauges are set. Default 1 second. */
  readonly tableSampleInterval?: Duration.DurationInput | undefined
}

/**
 * Turns telemetry on for the routing API and the route table built with it.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<never> =>
  Layer.succeed(Internal.Telemetry, { tableSampleInterval: Duration.decode(options.tableSampleInterval ?? "1 second") })

/**
 * Requests answered by the routing API (a counter), labelled `operation` (`create`, `get`, `list`, `update`,
 * `remove`, or `method_not_allowed`) and `status` (the HTTP status).
 *
 * @since 0.3.0
 * @category metrics
 */
export const requests = Requests.requests

/**
 * How long the routing API took to answer a request, in milliseconds (a histogram), labelled `operation`. It is timed
 * from the moment the adapter runs the request's Effect to its answer: the checks of the request line and headers made
 * before (a few microseconds) and the writing of the answer after are outside it.
 *
 * @since 0.3.0
 * @category metrics
 */
export const requestDuration = Requests.requestDuration

/**
 * How long a store operation made by the routing API took, in milliseconds (a histogram), labelled `operation`
 * (`create`, `findById`, `list`, `update`, `remove`, `createIdempotent`) and `outcome` (`success` or the error's tag).
 * Over `RouteTable.layer`'s store, the time includes applying the change to the table.
 *
 * @since 0.3.0
 * @category metrics
 */
export const storeOperationDuration = Store.storeOperationDuration

/**
 * Routes in the process's route table (a gauge), set every `tableSampleInterval` while `RouteTable.layer` lives.
 *
 * @since 0.3.0
 * @category metrics
 */
export const tableRoutes = Table.tableRoutes

/**
 * `RouteTable.Status.stalenessMillis` (a gauge), set every `tableSampleInterval`: how long ago the table was last
 * confirmed equal to the store. Zero for a store only this process changes; under the store's poll interval while the
 * store is reachable; growing through an outage.
 *
 * @since 0.3.0
 * @category metrics
 */
export const tableStaleness = Table.tableStaleness

/**
 * Change propagation lag, in milliseconds (a histogram): for each route created by another process, the time from
 * the creating process stamping its `createdAt` (just before the write) to the route's arrival in this process's
 * table from the change feed. It includes the write and commit, and any skew between the two processes' clocks. Updates
 * and deletes carry no time of their own and are not measured; `tableStaleness` bounds how late they can be.
 *
 * @since 0.3.0
 * @category metrics
 */
export const propagationLag = Table.propagationLag

/**
 * `store` with a span and a duration (`storeOperationDuration`) per operation; what the routing API does to its store
 * when telemetry is on. A store's read from memory (`RouteRepository.MemoryRead`), a map's lookup, is a service of its
 * own, left as it is: the request's span and metrics see it.
 *
 * @since 0.3.0
 * @category instrumentation
 */
export const instrumentRepository = (
  store: RouteRepository.RouteRepository["Type"]
): RouteRepository.RouteRepository["Type"] => Store.instrumentStore(store)
