/**
 * The services a table's layer provides (`RouteTable.layer`, `RouteTable.layerFrom`, a follower's layer): the table,
 * its replay ring and its status, and the context they make with the table's store and what the store offers.
 *
 * @internal
 */
import { Context, Effect } from "effect"
import type * as Route from "../../Route.js"
import { RouteRepository } from "../../RouteRepository.js"
import type { Table } from "../../RouteTable.js"
import { withCapabilities } from "../store/capabilities.js"
import type * as Ring from "./replayRing.js"
import type { Status } from "./status.js"
import type { Parts } from "./storeStart.js"

/**
 * The process's table of stored routes, as the routers read it (`RouterListener`, `RouterHttpApp`). Provided by
 * `layer`, which keeps it equal to the store.
 *
 * @since 0.2.0
 * @category tags
 */
export class RouteTable extends Context.Tag("route-registry/RouteTable")<RouteTable, Table<Route.StoredRoute>>() {}

/**
 * The process's replay ring: the last changes its table took, numbered, which the routing API's change stream
 * (`GET /v1/routing/changes`) replays from a client's cursor and pushes as they happen. Provided with the table by
 * `layer` and by a follower's layer. (The stored change log, `GET /v1/routing/history`, is the store's.)
 *
 * @since 0.5.0
 * @category tags
 */
export class ReplayRing extends Context.Tag("route-registry/RouteTable/ReplayRing")<
  ReplayRing,
  Ring.ReplayRing
>() {}

/**
 * The status of the process's table, provided by `layer`: `get` in an Effect, `unsafeGet` from plain code (a
 * readiness endpoint). Both read it at the moment they are called.
 *
 * @since 0.2.0
 * @category tags
 */
export class TableStatus extends Context.Tag("route-registry/RouteTable/TableStatus")<TableStatus, {
  readonly get: Effect.Effect<Status>
  readonly unsafeGet: () => Status
}>() {}

/**
 * What a table's layer over its own store provides: the table, its status and replay ring, the table's store, and
 * what the store offers beside it as the table changes it (its change feed is the table's to follow).
 */
export const contextOf = (parts: Parts) =>
  withCapabilities(
    Context.make(RouteTable, parts.table as Table<Route.StoredRoute>).pipe(
      Context.add(RouteRepository, parts.store),
      Context.add(TableStatus, { get: Effect.sync(parts.status), unsafeGet: parts.status }),
      Context.add(ReplayRing, parts.ring)
    ),
    parts.offered
  )
