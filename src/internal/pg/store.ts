/**
 * The Postgres store's operations, as functions over one context record (`Store`): what `PgRouteRepository.make`
 * builds once and every operation reads.
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import type { Context } from "effect"
import { Effect, Exit } from "effect"
import * as Route from "../../Route.js"
import type { ListQuery, Page, Precondition, RouteIdGenerator, WriteError } from "../../RouteRepository.js"
import type * as Split from "../../Split.js"
import * as When from "../route/when.js"
import {
  type OutsidePrefixes,
  type PreconditionFailed,
  type RouteConflict,
  routeConflict,
  RouteNotFound,
  type StoreUnavailable,
  TooManyMethods
} from "../store/errors.js"
import { barredBy, MAX_METHODS, patchChanges } from "../store/rules.js"
import * as Batch from "./batch.js"
import type * as Deadline from "./deadline.js"
import { storeErrors } from "./errors.js"
import * as Log from "./log.js"
import type { Settings } from "./options.js"
import * as Row from "./row.js"
import * as Witness from "./witness.js"

/** What every operation of the store reads: the client, its names and statement parts, and the deadline. */
export interface Store {
  /** The host's client without its name transforms: the store's rows keep their SQL names. */
  readonly sql: SqlClient.SqlClient
  readonly settings: Settings
  readonly ids: Context.Tag.Service<typeof RouteIdGenerator>
  readonly columns: Statement.Fragment
  /** Starts every read statement: past the deadline, the store finds it by this and cancels it. */
  readonly readMark: Statement.Fragment
  readonly deadline: Deadline.Deadline
  /** The unique index on method and shape refused the row. */
  readonly isShapeConflict: (error: unknown) => error is SqlError
  /** The method bound refused the row; the whole statement is rolled back. */
  readonly isMethodLimit: (error: unknown) => error is SqlError
}

/** The failures of a create, besides the database's. */
export type CreateError = RouteConflict | TooManyMethods

/** The route that holds a method and shape another route asked for. */
export interface Holder {
  readonly id: string
  readonly method: string
  readonly path: string
  /** The conditions both routes have, as the `when_key` column keeps them (`""` for none). */
  readonly when_key: string
}

export const notFound = (id: string) => Effect.fail(new RouteNotFound({ id }))

export const tooManyMethods = (method: string) => Effect.fail(new TooManyMethods({ method, limit: MAX_METHODS }))

// The conflict with the route that holds the method and shape, or, when none does any more (it moved or went away
// between the refusal and the read), the operation again.
export const conflictOr = <A, E>(
  holders: ReadonlyArray<Holder>,
  retry: () => Effect.Effect<A, E>
): Effect.Effect<A, E | RouteConflict> =>
  holders.length === 0
    ? retry()
    : Effect.fail(
      routeConflict(holders[0]!.method, holders[0]!.path, holders[0]!.id, Row.whenOfKey(holders[0]!.when_key))
    )

/** A route id is a UUID: any other string is not found without asking the database (which would refuse it). */
export const withRouteId = <A, E>(id: string, operation: (id: Route.RouteId) => Effect.Effect<A, E | SqlError>) =>
  Route.isRouteId(id) ? storeErrors(operation(id)) : notFound(id)

// Revisions only ever are integers: others in a precondition name no revision (and would not parse as bigint).
// The path prefixes are part of the same statement's condition, so they are decided on the row the change locks.
const revisionIn = ({ sql }: Store, precondition: Precondition | undefined) => {
  const revisions = precondition?.ifMatch === undefined
    ? sql``
    : sql`AND revision = ANY(${precondition.ifMatch.filter(Number.isSafeInteger)})`
  const prefixes = precondition?.pathPrefixes
  if (prefixes === undefined) return revisions
  const under = prefixes.map((prefix) => sql`path = ${prefix} OR starts_with(path, ${`${prefix}/`})`)
  return sql`${revisions} AND (${under.length === 0 ? sql`false` : sql.or(under)})`
}

export const readRoute = ({ columns, readMark, settings, sql }: Store, id: Route.RouteId) => {
  const table = sql(settings.qualified)
  return Effect.map(sql<Row.RouteRow>`${readMark}SELECT ${columns} FROM ${table} WHERE id = ${id}`, (rows) => rows[0])
}

// A conditional statement that changed nothing says only that the route was missing, did not meet the precondition,
// or needed no change. One read decides which; when it shows none of them (the route changed between the two
// statements), `retry` runs the operation again on the new state.
const decide = <A, E>(
  store: Store,
  id: Route.RouteId,
  precondition: Precondition | undefined,
  settled: (route: Route.StoredRoute) => Effect.Effect<A, E | SqlError> | undefined,
  retry: () => Effect.Effect<A, E | SqlError>
): Effect.Effect<A, E | SqlError | RouteNotFound | OutsidePrefixes | PreconditionFailed> =>
  Effect.flatMap(
    readRoute(store, id),
    (row): Effect.Effect<A, E | SqlError | RouteNotFound | OutsidePrefixes | PreconditionFailed> => {
      if (row === undefined) return notFound(id)
      const current = Row.decode(row)
      const barred = barredBy(precondition, current)
      return barred !== undefined ? Effect.fail(barred) : settled(current) ?? retry()
    }
  )

/**
 * Inserts one route with the next revision and its log entry, in one statement that locks the counter first of all
 * (`Log.locked`: no other writer of the store can commit until this transaction does); the unique index decides
 * conflicts: of concurrent inserts of one shape exactly one returns. Runs in the caller's transaction. Nothing in it
 * reads what another writer may have committed while it waited for the lock, but through the unique index (which
 * sees it), so its snapshot, taken before the wait, is never stale where it matters. The method bound's refusal is
 * the database's error, which ends the transaction (`create` answers it).
 */
export const insert = (
  store: Store,
  route: Route.Route,
  change: Log.Change
): Effect.Effect<Route.StoredRoute, RouteConflict | SqlError> => {
  const { columns, settings, sql } = store
  const table = sql(settings.qualified)
  const shape = Route.shapeOf(route.path)
  const whenKey = When.keyOf(route.when)
  const base = sql`(SELECT revision FROM locked)`
  const middleware = Row.middlewareColumns(route.middleware)
  return Effect.flatMap(
    sql<Row.RouteRow>`
    WITH ${Log.locked(store)},
    changed AS (
      INSERT INTO ${table} (id, method, path, path_shape, middleware, handler, created_at, revision, enabled, split,
        middleware_config, description, tags, when_key)
      VALUES (${route.id}, ${route.method}, ${route.path}, ${shape}, ${middleware.middleware}, ${route.handler},
              ${route.createdAt}, ${base} + 1, ${route.enabled !== false}, ${splitValue(sql, route.split)},
              ${configValue(sql, middleware.middleware_config)}, ${route.description ?? ""}, ${route.tags ?? []},
              ${whenKey})
      ON CONFLICT (method, path_shape, when_key) DO NOTHING
      RETURNING ${columns}
    ),
    ${
      Log.logOne(store, change.restoredFrom === undefined ? "create" : "restore", change, {
        before: undefined,
        after: "changed"
      })
    },
    ${Log.advance(store, base, change.dryRun)}
    SELECT ${columns} FROM changed`,
    (inserted) =>
      inserted.length > 0
        ? Effect.succeed(Row.decode(inserted[0]!))
        : Effect.flatMap(
          sql<{ id: string }>`SELECT id FROM ${table}
            WHERE method = ${route.method} AND path_shape = ${shape} AND when_key = ${whenKey}`,
          (holders) =>
            conflictOr(
              holders.map(({ id }) => ({ id, method: route.method, path: route.path, when_key: whenKey })),
              () => insert(store, route, change)
            )
        )
  )
}

/** `insert`, with the method bound's refusal answered `TooManyMethods`. */
export const create = (
  store: Store,
  route: Route.Route,
  change: Log.Change
): Effect.Effect<Route.StoredRoute, CreateError | SqlError> =>
  Effect.catchIf(insert(store, route, change), store.isMethodLimit, () => tooManyMethods(route.method))

/** An update: which route, the fields it replaces, its precondition, and the change as its log entry records it. */
export interface Updating {
  readonly id: Route.RouteId
  readonly patch: Route.RoutePatch
  readonly precondition: Precondition | undefined
  readonly change: Log.Change
}

/**
 * The statement that replaces the fields `patch` gives, checks the precondition, writes only a real change, and logs
 * it, at the revision after the counter's. Run in a transaction that already holds the counter (`Log.lock`), so that
 * its snapshot (`old`, the entry's `before`) is taken after every change committed before it.
 */
export const updateStatement = (store: Store, { change, id, patch, precondition }: Updating) => {
  const { columns, settings, sql } = store
  const table = sql(settings.qualified)
  const base = sql`(SELECT revision FROM locked)`
  const given: Array<readonly [column: string, value: unknown]> = []
  if (patch.method !== undefined) given.push(["method", patch.method])
  if (patch.path !== undefined) given.push(["path", patch.path], ["path_shape", Route.shapeOf(patch.path)])
  if (patch.middleware !== undefined) {
    const middleware = Row.middlewareColumns(patch.middleware)
    given.push(["middleware", middleware.middleware], [
      "middleware_config",
      configValue(sql, middleware.middleware_config)
    ])
  }
  if (patch.handler !== undefined) given.push(["handler", patch.handler])
  if (patch.enabled !== undefined) given.push(["enabled", patch.enabled])
  if (patch.split !== undefined) given.push(["split", splitValue(sql, patch.split)])
  if (patch.description !== undefined) given.push(["description", patch.description])
  if (patch.tags !== undefined) given.push(["tags", patch.tags])
  if (patch.when !== undefined) given.push(["when_key", When.keyOf(patch.when ?? undefined)])
  const action = change.restoredFrom === undefined ? "update" : "restore"
  // One statement checks the precondition, writes only a real change and logs it; the unique index decides conflicts.
  return sql<Row.RouteRow>`
    WITH ${Log.locked(store)},
    old AS (SELECT ${columns} FROM ${table} WHERE id = ${id}),
    changed AS (
      UPDATE ${table} SET ${sql.csv(given.map(([column, value]) => sql`${sql(column)} = ${value}`))},
        revision = ${base} + 1
      WHERE id = ${id} ${revisionIn(store, precondition)}
        AND ${sql.or(given.map(([column, value]) => sql`${value} IS DISTINCT FROM ${sql(column)}`))}
      RETURNING ${columns}
    ),
    ${Log.logOne(store, action, change, { before: "old", after: "changed" })},
    ${Log.advance(store, base, change.dryRun)}
    SELECT ${columns} FROM changed`
}

/**
 * The route that holds the method and shape `patch` asks of route `id`, with that method and path: read after the unique
 * index refused the change.
 */
export const holderOf = (
  { readMark, settings, sql }: Store,
  id: Route.RouteId,
  patch: Route.RoutePatch
): Effect.Effect<ReadonlyArray<Holder>, SqlError> => {
  const table = sql(settings.qualified)
  const shape = patch.path === undefined ? undefined : Route.shapeOf(patch.path)
  const whenKey = patch.when === undefined ? undefined : When.keyOf(patch.when ?? undefined)
  return sql<Holder>`${readMark}
    SELECT other.id AS id, COALESCE(${patch.method ?? null}, self.method) AS method,
           COALESCE(${patch.path ?? null}, self.path) AS path, other.when_key AS when_key
    FROM ${table} AS self JOIN ${table} AS other
      ON other.method = COALESCE(${patch.method ?? null}, self.method)
      AND other.path_shape = COALESCE(${shape ?? null}, self.path_shape)
      AND other.when_key = COALESCE(${whenKey ?? null}, self.when_key) AND other.id <> self.id
    WHERE self.id = ${id}`
}

/** The failures of an update, besides the database's. */
export type UpdateError = RouteNotFound | OutsidePrefixes | PreconditionFailed

/**
 * The update in a transaction that holds the counter (`Log.lock`): the statement and, when it changed nothing, why. A
 * refusal by the method bound or the unique index fails with the database's error, which ends the transaction (or the
 * savepoint it runs in): `refusedUpdate` answers it.
 */
export const updateStep = (store: Store, one: Updating): Effect.Effect<Route.StoredRoute, UpdateError | SqlError> => {
  const { id, patch, precondition } = one
  const unchanged = (current: Route.StoredRoute) => patchChanges(current, patch) ? undefined : Effect.succeed(current)
  const empty = patch.method === undefined && patch.path === undefined && patch.middleware === undefined &&
    patch.handler === undefined && patch.enabled === undefined && patch.split === undefined &&
    patch.description === undefined && patch.tags === undefined && patch.when === undefined
  const attempt = (): Effect.Effect<Route.StoredRoute, UpdateError | SqlError> =>
    empty ?
      decide(store, id, precondition, unchanged, attempt) :
      Effect.flatMap(
        updateStatement(store, one),
        (rows) =>
          rows.length > 0
            ? Effect.succeed(Row.decode(rows[0]!))
            : decide(store, id, precondition, unchanged, attempt)
      )
  return attempt()
}

/**
 * What an update the database refused answers, once its transaction (or savepoint) is undone: `TooManyMethods` for the
 * method bound; for the unique index, the conflict with the route that holds the shape, read by `read`, or, when none
 * does any more, the update `again`. `undefined` for any other error.
 */
export const refusedUpdate = <A, E>(
  store: Store,
  { id, patch }: Updating,
  error: unknown,
  read: <B, F>(effect: Effect.Effect<B, F | SqlError>) => Effect.Effect<B, F | SqlError | StoreUnavailable>,
  again: () => Effect.Effect<A, E>
): Effect.Effect<A, E | CreateError | SqlError | StoreUnavailable> | undefined =>
  store.isMethodLimit(error)
    ? tooManyMethods(patch.method!)
    : store.isShapeConflict(error)
    ? Effect.flatMap(read(holderOf(store, id, patch)), (holders) => conflictOr(holders, again))
    : undefined

/** Replaces the fields `patch` gives, checking the precondition and writing (and logging) only a real change. */
export const update = (store: Store, one: Updating): Effect.Effect<Route.StoredRoute, WriteError | SqlError> =>
  // A refusal by the method bound or the unique index ends the transaction: both are answered after it.
  Effect.catchIf(
    Log.write(
      store,
      Effect.zipRight(Log.lock(store), updateStep(store, one)),
      one.change.dryRun,
      Witness.route(store, one.change.at)
    ),
    (error) => store.isMethodLimit(error) || store.isShapeConflict(error),
    (error) => refusedUpdate(store, one, error, store.deadline.read, () => update(store, one))!
  )

/**
 * Removes the route, checking the precondition, and logs it; gives the removal's revision. One statement that locks
 * the counter first of all (`Log.locked`, a condition on no row, which the database checks before it reads any row),
 * then the route's row: the order every writer of the store takes them in. What it logs is the row as the delete
 * found it once it held it, never its snapshot's. Runs in the caller's transaction.
 */
export const removeStep = (
  store: Store,
  id: Route.RouteId,
  precondition: Precondition | undefined,
  change: Log.Change
): Effect.Effect<number, UpdateError | SqlError> => {
  const { settings, sql } = store
  const table = sql(settings.qualified)
  const base = sql`(SELECT revision FROM locked)`
  const attempt: Effect.Effect<number, UpdateError | SqlError> = Effect.flatMap(
    // A delete is a change too: it takes a revision, which the log records.
    sql<{ revision: string }>`
      WITH ${Log.locked(store)},
      changed AS (
        DELETE FROM ${table} WHERE ${base} IS NOT NULL AND id = ${id} ${revisionIn(store, precondition)}
        RETURNING id, method, path, middleware, handler, created_at, ${base} + 1 AS revision, enabled, split,
          middleware_config, description, tags, when_key
      ),
      ${Log.logOne(store, "delete", change, { before: "changed", after: undefined })},
      ${Log.advance(store, base, change.dryRun)}
      SELECT revision FROM changed`,
    (deleted) =>
      deleted.length > 0 ?
        Effect.succeed(Number(deleted[0]!.revision)) :
        decide(store, id, precondition, () => undefined, () => attempt)
  )
  return attempt
}

/** The witness entry of a removal that answered `revision`. */
export const removed = (id: Route.RouteId, change: Log.Change) => (revision: number) => [
  { revision, routeId: id, at: change.at }
]

/** `removeStep` in a transaction of its own (or a savepoint of the host's). */
export const remove = (
  store: Store,
  id: Route.RouteId,
  precondition: Precondition | undefined,
  change: Log.Change
): Effect.Effect<number, UpdateError | StoreUnavailable | SqlError> =>
  Log.write(
    store,
    removeStep(store, id, precondition, change),
    change.dryRun,
    (revision) => Witness.logged(store, removed(id, change)(revision))
  )

// A split as the jsonb column holds it; `null` for none.
const splitValue = (sql: SqlClient.SqlClient, split: Split.Split | null | undefined) =>
  split == null ? sql`NULL::jsonb` : sql`${JSON.stringify(split)}::jsonb`

// Middleware entries with their configs as the jsonb column holds them; `null` when no entry has a config.
const configValue = (sql: SqlClient.SqlClient, entries: ReadonlyArray<unknown> | null) =>
  entries === null ? sql`NULL::jsonb` : sql`${JSON.stringify(entries)}::jsonb`

// Stored ids are lowercase canonical UUIDs, whose byte order is the order of the uuid type.
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

// A search (`q`): the routes' search text (path, handler, middleware names, description and tags, one a line) contains
// it, which the trigram index answers when migration 11 could make one; then each field is checked, so that no match
// spans two.
const containing = (sql: Store["sql"], searchFunction: string, text: string) =>
  sql`${sql(searchFunction)}(path, handler, middleware, description, tags) LIKE ${`%${
    text.replace(/[\\%_]/g, "\\$&")
  }%`}
    AND (strpos(path, ${text}) > 0 OR strpos(handler, ${text}) > 0 OR strpos(description, ${text}) > 0
      OR EXISTS (SELECT FROM unnest(middleware) AS name WHERE strpos(name, ${text}) > 0)
      OR EXISTS (SELECT FROM unnest(tags) AS tag WHERE strpos(tag, ${text}) > 0))`

/** One page of routes in id order, read in one statement. */
export const list = ({ columns, readMark, settings, sql }: Store, query: ListQuery) => {
  const table = sql(settings.qualified)
  const { after, handler, method, middleware, pathPrefix, q } = query
  const conditions = [
    after === undefined
      ? undefined
      : CANONICAL_UUID.test(after)
      ? sql`id > ${after}`
      // Any other string is compared as text, in byte order; ids hold no NUL, so the part before one orders them the
      // same way.
      : sql`id::text COLLATE "C" > ${after.split("\u0000")[0]}`,
    method === undefined ? undefined : sql`method = ${method}`,
    handler === undefined ? undefined : sql`handler = ${handler}`,
    query.enabled === undefined ? undefined : sql`enabled = ${query.enabled}`,
    middleware === undefined ? undefined : sql`middleware @> ARRAY[${middleware}]::text[]`,
    query.tag === undefined ? undefined : sql`tags @> ARRAY[${query.tag}]::text[]`,
    pathPrefix === undefined ? undefined : sql`starts_with(path, ${pathPrefix})`,
    q === undefined ? undefined : containing(sql, settings.searchFunction, q)
  ].filter((condition) => condition !== undefined)
  // One more row than the page says whether another follows.
  return Effect.map(
    sql<Row.RouteRow>`${readMark}
      SELECT ${columns} FROM ${table} WHERE ${sql.and(conditions)} ORDER BY id LIMIT ${query.limit + 1}`,
    (rows): Page => ({ items: rows.slice(0, query.limit).map(Row.decode), hasMore: rows.length > query.limit })
  )
}

export const findBatch = ({ columns, readMark, settings, sql }: Store) => {
  const table = sql(settings.qualified)
  return Batch.make((wanted: ReadonlyArray<Route.RouteId>) =>
    Effect.map(
      sql<Row.RouteRow>`${readMark}SELECT ${columns} FROM ${table} WHERE id = ANY(${wanted}::uuid[])`,
      (rows) => {
        const found = new Map(rows.map((row) => [row.id, Row.decode(row)]))
        return wanted.map((id) => {
          const route = found.get(id)
          return route === undefined ? Exit.fail(new RouteNotFound({ id })) : Exit.succeed(route)
        })
      }
    )
  )
}

/** Inside a host's transaction a statement must run on its connection: no batch. */
export const unlessInTransaction = <A, E>(batched: Effect.Effect<A, E>, alone: Effect.Effect<A, E>) =>
  Effect.flatMap(
    Effect.serviceOption(SqlClient.TransactionConnection),
    (transaction) => transaction._tag === "Some" ? alone : batched
  )
