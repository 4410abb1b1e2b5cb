/**
 * A route as a row of the Postgres store, the one codec of the store, its change feed and its change log: rows read by
 * a statement, rows `json_agg` gives in a feed read, rows of a batched insert, the routes of an announcement, and the
 * entries of the log with the routes they hold.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Route from "../../Route.js"
import type { Action, HistoryEntry } from "../../RouteRepository.js"
import type * as Split from "../../Split.js"
import { optionalOf } from "../store/rules.js"

/** A route row, as a statement reads it or as JSON carries it (then `created_at` is text). */
export interface RouteRow {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<string>
  readonly handler: string
  readonly created_at: Date | string
  /** `true` unless the route is disabled; left out of an announcement's JSON when `true`. */
  readonly enabled?: boolean
  /** The split (jsonb), `null` or left out when there is none. */
  readonly split?: Split.Split | null
  /** A bigint: node-postgres gives a string unless the host's client parses it. */
  readonly revision: string | number | bigint
}

/** A route as JSON: in an announcement, or (with its shape and place) in a batched insert. */
export interface JsonRow extends RouteRow {
  readonly created_at: string
  readonly revision: number
}

/** The columns of a `RouteRow`, in every statement that reads routes. */
export const columns = (sql: SqlClient.SqlClient) =>
  sql`id, method, path, middleware, handler, created_at, revision, enabled, split`

// A route's fields as a row or the log holds them. Rows were validated when they were written, so they are trusted.
const trusted = (
  fields: Pick<RouteRow, "id" | "method" | "path" | "middleware" | "handler" | "enabled" | "split">,
  createdAt: Date | string
) => ({
  id: fields.id as Route.RouteId,
  method: fields.method as Route.HttpMethod,
  path: fields.path as Route.RoutePath,
  middleware: fields.middleware as ReadonlyArray<Route.MiddlewareName>,
  handler: fields.handler as Route.HandlerName,
  createdAt: typeof createdAt === "string" ? new Date(createdAt) : createdAt,
  ...optionalOf(fields)
})

/** The route a row holds. */
export const decode = (row: RouteRow): Route.StoredRoute =>
  new Route.StoredRoute({ ...trusted(row, row.created_at), revision: Number(row.revision) }, true)

/** A route as the change log keeps it: the API's JSON, as `Route.Route` encodes it (`Log.routeJson` builds it). */
export type LoggedRoute = typeof Route.Route.Encoded

/** A row of the change log, as a statement reads it (`entryColumns`). */
export interface EntryRow {
  /** A bigint, as `RouteRow.revision`. */
  readonly revision: string | number | bigint
  readonly at: Date
  readonly actor: string | null
  readonly action: Action
  readonly route_id: string
  readonly before: LoggedRoute | null
  readonly after: LoggedRoute | null
  readonly restored_from: string | number | bigint | null
  readonly batch: string | null
  /** A bigint, as `revision`. */
  readonly batch_end: string | number | bigint | null
}

/** The columns of an `EntryRow`, in every statement that reads the log. */
export const entryColumns = (sql: SqlClient.SqlClient) =>
  sql`revision, at, actor, action, route_id, before, after, restored_from, batch, batch_end`

const decodeLogged = (json: LoggedRoute | null): Route.Route | null =>
  json === null
    ? null
    : new Route.Route(trusted(json as unknown as Parameters<typeof trusted>[0], json.createdAt), true)

/** The entry a row of the log holds. */
export const decodeEntry = (row: EntryRow): HistoryEntry => ({
  revision: Number(row.revision),
  at: row.at,
  actor: row.actor,
  action: row.action,
  routeId: row.route_id,
  before: decodeLogged(row.before),
  after: decodeLogged(row.after),
  ...(row.restored_from === null ? {} : { restoredFrom: Number(row.restored_from) }),
  ...(row.batch === null ? {} : { batch: row.batch, batchEnd: Number(row.batch_end) })
})

// The columns every route has, as JSON.
const fields = (route: Route.Route) => ({
  id: route.id,
  method: route.method,
  path: route.path,
  middleware: route.middleware,
  handler: route.handler,
  created_at: route.createdAt.toISOString(),
  ...optionalOf(route)
})

/** A stored route as JSON; `decode` reads it back. */
export const encode = (route: Route.StoredRoute): JsonRow => ({ ...fields(route), revision: route.revision })

/** A route not stored yet as a row of a batched insert: with its shape, and its place in the batch. */
export const encodeInsert = (route: Route.Route, ord: number) => ({
  ...fields(route),
  enabled: route.enabled !== false,
  split: route.split ?? null,
  ord,
  path_shape: Route.shapeOf(route.path)
})
