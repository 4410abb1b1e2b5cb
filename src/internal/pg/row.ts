/**
 * A route as a row of the Postgres store, the one codec of the store and its change feed: rows read by a statement,
 * rows `json_agg` gives in a feed read, rows of a batched insert and the routes of an announcement.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Route from "../../Route.js"

/** A route row, as a statement reads it or as JSON carries it (then `created_at` is text). */
export interface RouteRow {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<string>
  readonly handler: string
  readonly created_at: Date | string
  /** A bigint: node-postgres gives a string unless the host's client parses it. */
  readonly revision: string | number | bigint
}

/** A route as JSON: in an announcement, or (with its shape and place) in a batched insert. */
export interface JsonRow extends RouteRow {
  readonly created_at: string
  readonly revision: number
}

/** The columns of a `RouteRow`, in every statement that reads routes. */
export const columns = (sql: SqlClient.SqlClient) => sql`id, method, path, middleware, handler, created_at, revision`

/** The route a row holds. Rows were validated when they were written, so they are trusted as routes. */
export const decode = (row: RouteRow): Route.StoredRoute =>
  new Route.StoredRoute({
    id: row.id as Route.RouteId,
    method: row.method as Route.HttpMethod,
    path: row.path as Route.RoutePath,
    middleware: row.middleware as ReadonlyArray<Route.MiddlewareName>,
    handler: row.handler as Route.HandlerName,
    createdAt: typeof row.created_at === "string" ? new Date(row.created_at) : row.created_at,
    revision: Number(row.revision)
  }, true)

// The columns every route has, as JSON.
const fields = (route: Route.Route) => ({
  id: route.id,
  method: route.method,
  path: route.path,
  middleware: route.middleware,
  handler: route.handler,
  created_at: route.createdAt.toISOString()
})

/** A stored route as JSON; `decode` reads it back. */
export const encode = (route: Route.StoredRoute): JsonRow => ({ ...fields(route), revision: route.revision })

/** A route not stored yet as a row of a batched insert: with its shape, and its place in the batch. */
export const encodeInsert = (route: Route.Route, ord: number) => ({
  ...fields(route),
  ord,
  path_shape: Route.shapeOf(route.path)
})
