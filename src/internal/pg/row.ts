/**
 * A route as a row of the Postgres store, the one codec of the store, its change feed and its change log: rows read by
 * a statement, rows `json_agg` gives in a feed read, rows of a batched insert, the routes of an announcement, and the
 * entries of the log with the routes they hold.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Route from "../../Route.js"
import type { Action, BatchApplied, HistoryEntry } from "../../RouteRepository.js"
import type * as Split from "../../Split.js"
import * as RouteFields from "../route/fields.js"
import * as SplitRules from "../route/split.js"
import * as When from "../route/when.js"
import { optionalOf } from "../store/rules.js"

/** A route row, as a statement reads it or as JSON carries it (then `created_at` is text). */
export interface RouteRow {
  readonly id: string
  readonly method: string
  readonly path: string
  /** The middleware names (a row); in JSON, the middleware entries with their configs. */
  readonly middleware: ReadonlyArray<RouteFields.Entry>
  /** (jsonb) The middleware entries with their configs, when some entry has one; `null` or left out otherwise. */
  readonly middleware_config?: ReadonlyArray<RouteFields.Entry> | null
  readonly handler: string
  readonly created_at: Date | string
  /** `true` unless the route is disabled; left out of an announcement's JSON when `true`. */
  readonly enabled?: boolean
  /** The split (jsonb), `null` or left out when there is none. */
  readonly split?: Split.Split | null
  /** `""` or left out when there is none. */
  readonly description?: string
  /** `[]` or left out when there are none. */
  readonly tags?: ReadonlyArray<string>
  /** The conditions' canonical JSON as the column holds it, `''` for none (a statement's row). */
  readonly when_key?: string
  /** The conditions (an announcement's or the log's JSON), left out when there are none. */
  readonly when?: When.When
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
  sql`id, method, path, middleware, handler, created_at, revision, enabled, split, middleware_config, description, tags,
    when_key`

// A route's fields as a row or the log holds them. Rows were validated when they were written, so they are trusted.
const trusted = (
  fields: Pick<
    RouteRow,
    | "id"
    | "method"
    | "path"
    | "middleware"
    | "middleware_config"
    | "handler"
    | "enabled"
    | "split"
    | "description"
    | "tags"
    | "when_key"
    | "when"
  >,
  createdAt: Date | string
) => ({
  id: fields.id as Route.RouteId,
  method: fields.method as Route.HttpMethod,
  path: fields.path as Route.RoutePath,
  middleware: fields.middleware_config ?? fields.middleware,
  handler: fields.handler as Route.HandlerName,
  createdAt: typeof createdAt === "string" ? new Date(createdAt) : createdAt,
  ...optionalOf({ ...fields, split: splitOf(fields.split), when: whenOf(fields) })
})

// A split as jsonb gives it back, its targets' keys reordered (`weight` before `handler`): in its one kept form again.
const splitOf = (split: Split.Split | null | undefined): Split.Split | null | undefined =>
  split == null ? split : SplitRules.canonical(split as unknown as Record<string, unknown>)

/** The conditions the `when_key` column keeps: their canonical JSON, `""` for none. */
export const whenOfKey = (key: string): When.When | undefined => key === "" ? undefined : JSON.parse(key) as When.When

// The conditions of a row (its column's text) or of JSON the log holds (jsonb, whose keys come back reordered).
const whenOf = (fields: Pick<RouteRow, "when_key" | "when">): When.When | undefined =>
  fields.when !== undefined
    ? When.canonical(fields.when as unknown as Record<string, unknown>)
    : fields.when_key === undefined
    ? undefined
    : whenOfKey(fields.when_key)

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
  readonly batch_description: string | null
}

/** The columns of an `EntryRow`, in every statement that reads the log. */
export const entryColumns = (sql: SqlClient.SqlClient) =>
  sql`revision, at, actor, action, route_id, before, after, restored_from, batch, batch_end, batch_description`

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
  ...(row.batch === null ? {} : { batch: row.batch, batchEnd: Number(row.batch_end) }),
  ...(row.batch_description === null ? {} : { batchDescription: row.batch_description })
})

/** An applied batch's answer again, from the JSON its key keeps (`batchAnswerJson`). */
export const decodeBatchAnswer = (json: string): BatchApplied => {
  const answer = JSON.parse(json) as {
    batch: string
    revision: number
    results: Array<{ status: 201 | 200 | 204; route: LoggedRoute | null; revision: number }>
  }
  return {
    batch: answer.batch,
    revision: answer.revision,
    results: answer.results.map(({ revision, route, status }) => ({
      status,
      revision,
      route: route === null
        ? null
        : new Route.StoredRoute({
          ...trusted(route as unknown as Parameters<typeof trusted>[0], route.createdAt),
          revision
        }, true)
    }))
  }
}

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

/** The middleware columns of a route: its names, and its entries when some entry has a config. */
export const middlewareColumns = (middleware: ReadonlyArray<RouteFields.Entry>) =>
  RouteFields.hasConfig(middleware)
    ? { middleware: middleware.map(RouteFields.nameOf), middleware_config: middleware }
    : { middleware, middleware_config: null }

/**
 * A route not stored yet as a row of a batched insert: with its shape, and its place in the batch. One literal of a
 * fixed shape: built from spreads of `fields` and the middleware columns, it cost ten times as much (30–65 µs a row
 * against 2–8 on the project's loaded machine), a tenth of a 1,000-create change set's time.
 */
export const encodeInsert = (route: Route.Route, ord: number) => {
  const { middleware, middleware_config } = middlewareColumns(route.middleware)
  return {
    id: route.id,
    method: route.method,
    path: route.path,
    middleware,
    middleware_config,
    handler: route.handler,
    created_at: route.createdAt.toISOString(),
    enabled: route.enabled !== false,
    split: route.split ?? null,
    description: route.description ?? "",
    tags: route.tags ?? [],
    when_key: When.keyOf(route.when),
    ord,
    path_shape: Route.shapeOf(route.path)
  }
}
