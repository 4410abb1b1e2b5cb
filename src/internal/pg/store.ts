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
import {
  type OutsidePrefixes,
  type PreconditionFailed,
  RouteConflict,
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
}

export const notFound = (id: string) => Effect.fail(new RouteNotFound({ id }))

export const tooManyMethods = (method: string) => Effect.fail(new TooManyMethods({ method, limit: MAX_METHODS }))

// The conflict with the route that holds the method and shape, or, when none does any more (it moved or went away
// between the refusal and the read), the operation again.
export const conflictOr = <A, E>(holders: ReadonlyArray<Holder>, retry: () => Effect.Effect<A, E>) =>
  holders.length === 0
    ? retry()
    : Effect.fail(
      new RouteConflict({ method: holders[0]!.method, path: holders[0]!.path, conflictingRouteId: holders[0]!.id })
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
 * sees it), so its snapshot, taken before the wait, is never stale where it matters.
 */
export const create = (
  store: Store,
  route: Route.Route,
  change: Log.Change
): Effect.Effect<Route.StoredRoute, CreateError | SqlError> => {
  const { columns, isMethodLimit, settings, sql } = store
  const table = sql(settings.qualified)
  const shape = Route.shapeOf(route.path)
  const base = sql`(SELECT revision FROM locked)`
  return sql<Row.RouteRow>`
    WITH ${Log.locked(store)},
    changed AS (
      INSERT INTO ${table} (id, method, path, path_shape, middleware, handler, created_at, revision, enabled, split)
      VALUES (${route.id}, ${route.method}, ${route.path}, ${shape}, ${route.middleware}, ${route.handler},
              ${route.createdAt}, ${base} + 1, ${route.enabled !== false}, ${splitValue(sql, route.split)})
      ON CONFLICT (method, path_shape) DO NOTHING
      RETURNING ${columns}
    ),
    ${
    Log.logOne(store, change.restoredFrom === undefined ? "create" : "restore", change, {
      before: undefined,
      after: "changed"
    })
  },
    ${Log.advance(store, base, change.dryRun)}
    SELECT ${columns} FROM changed`.pipe(
    Effect.catchIf(isMethodLimit, () => tooManyMethods(route.method)),
    Effect.flatMap((inserted) =>
      inserted.length > 0
        ? Effect.succeed(Row.decode(inserted[0]!))
        : Effect.flatMap(
          sql<{ id: string }>`SELECT id FROM ${table} WHERE method = ${route.method} AND path_shape = ${shape}`,
          (holders) =>
            conflictOr(
              holders.map(({ id }) => ({ id, method: route.method, path: route.path })),
              () => create(store, route, change)
            )
        )
    )
  )
}

/**
 * The statement that replaces the fields `patch` gives, checks the precondition, writes only a real change, and logs
 * it, at the revision after `base`. Run in a transaction that holds the counter (`Log.lock`).
 */
export const updateStatement = (
  store: Store,
  id: Route.RouteId,
  patch: Route.RoutePatch,
  precondition: Precondition | undefined,
  base: number,
  change: Log.Change
) => {
  const { columns, settings, sql } = store
  const table = sql(settings.qualified)
  const given: Array<readonly [column: string, value: unknown]> = []
  if (patch.method !== undefined) given.push(["method", patch.method])
  if (patch.path !== undefined) given.push(["path", patch.path], ["path_shape", Route.shapeOf(patch.path)])
  if (patch.middleware !== undefined) given.push(["middleware", patch.middleware])
  if (patch.handler !== undefined) given.push(["handler", patch.handler])
  if (patch.enabled !== undefined) given.push(["enabled", patch.enabled])
  if (patch.split !== undefined) given.push(["split", splitValue(sql, patch.split)])
  const action = change.restoredFrom === undefined ? "update" : "restore"
  // One statement checks the precondition, writes only a real change and logs it; the unique index decides conflicts.
  return sql<Row.RouteRow>`
    WITH old AS (SELECT ${columns} FROM ${table} WHERE id = ${id}),
    changed AS (
      UPDATE ${table} SET ${sql.csv(given.map(([column, value]) => sql`${sql(column)} = ${value}`))},
        revision = ${base + 1}
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
  return sql<Holder>`${readMark}
    SELECT other.id AS id, COALESCE(${patch.method ?? null}, self.method) AS method,
           COALESCE(${patch.path ?? null}, self.path) AS path
    FROM ${table} AS self JOIN ${table} AS other
      ON other.method = COALESCE(${patch.method ?? null}, self.method)
      AND other.path_shape = COALESCE(${shape ?? null}, self.path_shape) AND other.id <> self.id
    WHERE self.id = ${id}`
}

/**
 * The update in a transaction that holds the counter at `base` (`Log.lock`): the statement and, when it changed
 * nothing, why. A refusal by the method bound or the unique index fails with the database's error, which ends the
 * transaction (or the savepoint it runs in).
 */
export const updateStep = (
  store: Store,
  id: Route.RouteId,
  patch: Route.RoutePatch,
  precondition: Precondition | undefined,
  base: number,
  change: Log.Change
): Effect.Effect<Route.StoredRoute, RouteNotFound | OutsidePrefixes | PreconditionFailed | SqlError> => {
  const unchanged = (current: Route.StoredRoute) => patchChanges(current, patch) ? undefined : Effect.succeed(current)
  const empty = patch.method === undefined && patch.path === undefined && patch.middleware === undefined &&
    patch.handler === undefined && patch.enabled === undefined && patch.split === undefined
  const attempt = (): Effect.Effect<
    Route.StoredRoute,
    RouteNotFound | OutsidePrefixes | PreconditionFailed | SqlError
  > =>
    empty ?
      decide(store, id, precondition, unchanged, attempt) :
      Effect.flatMap(
        updateStatement(store, id, patch, precondition, base, change),
        (rows) =>
          rows.length > 0
            ? Effect.succeed(Row.decode(rows[0]!))
            : decide(store, id, precondition, unchanged, attempt)
      )
  return attempt()
}

/** Replaces the fields `patch` gives, checking the precondition and writing (and logging) only a real change. */
export const update = (
  store: Store,
  id: Route.RouteId,
  patch: Route.RoutePatch,
  precondition: Precondition | undefined,
  change: Log.Change
): Effect.Effect<Route.StoredRoute, WriteError | SqlError> =>
  // A refusal by the method bound or the unique index ends the transaction: both are answered after it.
  Log.write(
    store,
    Effect.flatMap(Log.lock(store), (base) => updateStep(store, id, patch, precondition, base, change)),
    change.dryRun,
    Witness.route(store, change.at)
  ).pipe(
    Effect.catchIf(store.isMethodLimit, () => tooManyMethods(patch.method!)),
    Effect.catchIf(
      store.isShapeConflict,
      () =>
        Effect.flatMap(
          store.deadline.read(holderOf(store, id, patch)),
          (holders) => conflictOr(holders, () => update(store, id, patch, precondition, change))
        )
    )
  )

/**
 * Removes the route, checking the precondition, and logs it; gives the removal's revision. One statement that locks
 * the counter first of all (`Log.locked`, a condition on no row, which the database checks before it reads any row),
 * then the route's row: the order every writer of the store takes them in. What it logs is the row as the delete
 * found it once it held it, never its snapshot's.
 */
export const remove = (
  store: Store,
  id: Route.RouteId,
  precondition: Precondition | undefined,
  change: Log.Change
): Effect.Effect<number, RouteNotFound | OutsidePrefixes | PreconditionFailed | StoreUnavailable | SqlError> => {
  const { settings, sql } = store
  const table = sql(settings.qualified)
  const base = sql`(SELECT revision FROM locked)`
  const attempt: Effect.Effect<number, RouteNotFound | OutsidePrefixes | PreconditionFailed | SqlError> = Effect
    .flatMap(
      // A delete is a change too: it takes a revision, which the log records.
      sql<{ revision: string }>`
        WITH ${Log.locked(store)},
        changed AS (
          DELETE FROM ${table} WHERE ${base} IS NOT NULL AND id = ${id} ${revisionIn(store, precondition)}
          RETURNING id, method, path, middleware, handler, created_at, ${base} + 1 AS revision, enabled, split
        ),
        ${Log.logOne(store, "delete", change, { before: "changed", after: undefined })},
        ${Log.advance(store, base, change.dryRun)}
        SELECT revision FROM changed`,
      (deleted) =>
        deleted.length > 0 ?
          Effect.succeed(Number(deleted[0]!.revision)) :
          decide(store, id, precondition, () => undefined, () => attempt)
    )
  const witness = (revision: number) => Witness.logged(store, [{ revision, routeId: id, at: change.at }])
  return Log.write(store, attempt, change.dryRun, witness)
}

// A split as the jsonb column holds it; `null` for none.
const splitValue = (sql: SqlClient.SqlClient, split: Split.Split | null | undefined) =>
  split == null ? sql`NULL::jsonb` : sql`${JSON.stringify(split)}::jsonb`

// Stored ids are lowercase canonical UUIDs, whose byte order is the order of the uuid type.
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

// A search (`q`): the routes' search text (path, handler and middleware names, one a line) contains it, which the
// trigram index answers when migration 8 could make one; then each field is checked, so that no match spans two.
const containing = (sql: Store["sql"], searchFunction: string, text: string) =>
  sql`${sql(searchFunction)}(path, handler, middleware) LIKE ${`%${text.replace(/[\\%_]/g, "\\$&")}%`}
    AND (strpos(path, ${text}) > 0 OR strpos(handler, ${text}) > 0
      OR EXISTS (SELECT FROM unnest(middleware) AS name WHERE strpos(name, ${text}) > 0))`

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

/** A create waiting for its batch: the route, and who makes it. */
export interface Creating {
  readonly route: Route.Route
  readonly actor: string | null
}

// Creates and reads made at the same moment outside a host's transaction share one statement each (a batch per turn
// of the event loop), so concurrent clients share round trips and commits. The batch's one statement locks the
// counter first of all (`Log.locked`, as a lone create does), so no other writer of the store commits while it runs: a
// route of a method and shape stored, or given earlier in the batch, is left out of the insert and takes the
// single-route path, which names the holder; the others take the revisions after the counter's in their order, and
// their log entries, in the same statement. A shape another writer committed while the statement waited for the lock
// is not in its snapshot: the unique index, which sees it, leaves that row out (`ON CONFLICT DO NOTHING`), its
// revision is skipped, and the counter takes the largest written. A row refused by the method bound fails the whole
// statement: then each route takes the single-route path in a transaction of its own, and only that one is refused.
// Rows of methods not stored yet go first, so a batch waits for the bound's lock before it holds rows another writer
// could wait for (each waiting for the other would deadlock). Both checks on stored rows are scalar subqueries, an
// index probe per row of the batch: as `[NOT] EXISTS` the planner may hash the whole table instead, which took 3 ms of
// a 50-row batch's 10 at 13,000 routes and grows with the table (docs/performance.md).
export const createBatch = (store: Store) => {
  const { columns, deadline, isMethodLimit, settings, sql } = store
  const table = sql(settings.qualified)
  const alone = ({ actor, route }: Creating) => create(store, route, { actor, at: route.createdAt })
  const aloneWritten = (one: Creating) => deadline.write(Witness.route(store, one.route.createdAt))(alone(one))
  return Batch.make((creating: ReadonlyArray<Creating>) =>
    // A create alone in its turn takes the single-route path: one statement, the lock in it.
    creating.length === 1 ?
      Effect.map(Effect.exit(aloneWritten(creating[0]!)), (exit) => [exit]) :
      deadline.write(Witness.routes(store, (i) => creating[i]!.route.createdAt))(Effect.gen(function*() {
        const base = sql`(SELECT revision FROM locked)`
        const rows = creating.map(({ actor, route }, ord) => ({ ...Row.encodeInsert(route, ord), actor }))
        const inserted = yield* sql<Row.RouteRow>`
        WITH ${Log.locked(store)},
        input AS (
          SELECT * FROM json_to_recordset(${JSON.stringify(rows)}::json) AS x(
            ord int, id uuid, method text, path text, path_shape text, middleware text[], handler text,
            created_at timestamptz, actor text, enabled boolean, split jsonb
          )
        ),
        fresh AS (
          SELECT DISTINCT ON (method, path_shape) * FROM input
          WHERE (
            SELECT true FROM ${table} AS stored
            WHERE stored.method = input.method AND stored.path_shape = input.path_shape LIMIT 1
          ) IS NULL
          ORDER BY method, path_shape, ord
        ),
        numbered AS (SELECT *, ${base}::bigint + row_number() OVER (ORDER BY ord) AS revision FROM fresh),
        changed AS (
          INSERT INTO ${table} (id, method, path, path_shape, middleware, handler, created_at, revision, enabled, split)
          SELECT id, method, path, path_shape, middleware, handler, created_at, revision, enabled, split FROM numbered
          ORDER BY (SELECT true FROM ${table} AS stored WHERE stored.method = numbered.method LIMIT 1) IS NOT NULL, ord
          ON CONFLICT (method, path_shape) DO NOTHING
          RETURNING ${columns}
        ),
        logged AS (
          INSERT INTO ${sql(settings.history)} (revision, at, actor, action, route_id, before, after)
          SELECT changed.revision, changed.created_at, numbered.actor, 'create', changed.id, NULL,
            ${Log.routeJson(sql, "changed")}
          FROM changed JOIN numbered ON numbered.id = changed.id
        ),
        ${Log.advance(store, base, false, true)}
        SELECT ${columns} FROM changed`
        const stored = new Map(inserted.map((row) => [row.id, Row.decode(row)]))
        // A conflict fails its own create; any other failure has ended the transaction, and fails the batch.
        return yield* Effect.forEach(creating, (one) => {
          const created = stored.get(one.route.id)
          if (created !== undefined) return Effect.succeed(Exit.succeed(created))
          return alone(one).pipe(
            Effect.map((route): Exit.Exit<Route.StoredRoute, CreateError> => Exit.succeed(route)),
            Effect.catchTag("RouteConflict", (conflict) => Effect.succeed(Exit.fail(conflict)))
          )
        })
      })).pipe(
        // The method bound refused a row: the whole statement and its transaction are undone. Each route then takes a
        // transaction of its own, and only the ones past the bound are refused.
        Effect.catchIf(
          isMethodLimit,
          () =>
            Effect.forEach(creating, (one) => Effect.exit(aloneWritten(one)), {
              concurrency: "unbounded"
            })
        )
      )
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
