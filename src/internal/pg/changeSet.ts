/**
 * The Postgres store's change sets (`RouteRepository.applyBatch`, docs/batches.md): one transaction that takes the
 * counter first, as every writer of the store does (`Log.lock`), so it commits in revision order with the other
 * processes' changes and with this process's groups (internal/pg/group.ts), beside which it runs as a unit of its own.
 * Holding the counter, it locks the routes the batch names, reads the routes holding the methods and shapes its routes
 * end with, and decides the whole batch as the memory store does (`store/batch.ts`). Then it writes in a few
 * statements, whatever the number of operations: the deletes, the updates (those changing method or shape first set
 * aside under a shape no route can have, so that two routes may swap), then one for the creates, the log entries and
 * the counter advanced. Every reader sees all of it or none: the change feed reads by transaction, and the log by
 * revision up to a committed counter.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either } from "effect"
import * as Route from "../../Route.js"
import type { BatchOperation, BatchOptions } from "../../RouteRepository.js"
import * as When from "../route/when.js"
import * as Batch from "../store/batch.js"
import { BatchRefused, type StoreUnavailable, TooManyMethods } from "../store/errors.js"
import { MAX_METHODS } from "../store/rules.js"
import * as Log from "./log.js"
import * as Row from "./row.js"
import type { Store } from "./store.js"
import * as Witness from "./witness.js"

// The route columns a change set writes, as `json_to_recordset` reads its rows (`Row.encodeInsert` and a revision).
const ROW_TYPES = `id uuid, method text, path text, path_shape text, middleware text[], handler text,
  created_at timestamptz, enabled boolean, split jsonb, middleware_config jsonb, description text, tags text[],
  when_key text, revision bigint`

const rowsJson = (routes: ReadonlyArray<Route.StoredRoute>) =>
  JSON.stringify(routes.map((route, ord) => Object.assign(Row.encodeInsert(route, ord), { revision: route.revision })))

// What the batch reads, holding the counter: its routes (locked) and the holders of the methods and shapes it takes.
const known = (store: Store, operations: ReadonlyArray<BatchOperation>) =>
  Effect.gen(function*() {
    const { columns, settings, sql } = store
    const table = sql(settings.qualified)
    const ids = operations.flatMap((operation) =>
      operation.op !== "create" && Route.isRouteId(operation.id) ? [operation.id] : []
    )
    const rows = ids.length === 0
      ? []
      : yield* sql<Row.RouteRow>`SELECT ${columns} FROM ${table} WHERE id = ANY(${ids}::uuid[]) FOR UPDATE`
    const routes = new Map(rows.map((row) => [row.id, Row.decode(row)]))
    const taken = operations.flatMap((operation) => {
      if (operation.op === "create") {
        return [[operation.route.method, operation.route.path, operation.route.when] as const]
      }
      const route = operation.op === "update" ? routes.get(operation.id) : undefined
      if (route === undefined || operation.op !== "update") return []
      const { patch } = operation
      const when = patch.when === undefined ? route.when : patch.when ?? undefined
      return [[patch.method ?? route.method, patch.path ?? route.path, when] as const]
    })
    const holders = taken.length === 0 ? [] : yield* sql<
      { id: string; method: string; path_shape: string; when_key: string }
    >`
      SELECT id, method, path_shape, when_key FROM ${table}
      WHERE (method, path_shape, when_key) IN (
        SELECT * FROM unnest(${taken.map(([method]) => method)}::text[], ${
      taken.map(([, path]) => Route.shapeOf(path))
    }::text[], ${taken.map(([, , when]) => When.keyOf(when))}::text[]))`
    const byKey = new Map(
      holders.map((holder) => [
        holder.when_key === "" ?
          `${holder.method} ${holder.path_shape}` :
          `${holder.method} ${holder.path_shape} ${holder.when_key}`,
        holder.id
      ])
    )
    return { route: (id: string) => routes.get(id), holder: (key: string) => byKey.get(key) } satisfies Batch.Known
  })

// The log entries of the steps as `json_to_recordset` reads them, each route as the API answers it.
const entriesJson = (steps: ReadonlyArray<Batch.Step>) =>
  `[${
    steps.map(({ action, after, before, revision }) =>
      `{"revision":${revision},"action":"${action}","route_id":"${(after ?? before)!.id}",` +
      `"before":${before === null ? "null" : Route.toJson(before)},"after":${
        after === null ? "null" : Route.toJson(after)
      }}`
    ).join(",")
  }]`

// Writes the plan's steps, after `base`: a handful of statements whatever their number.
const write = (store: Store, plan: Batch.Plan, change: Log.Change, base: number, description: string | undefined) =>
  Effect.gen(function*() {
    const { settings, sql } = store
    const table = sql(settings.qualified)
    const steps = plan.steps
    if (steps.length === 0) return
    const removed = steps.flatMap(({ after, before }) => after === null ? [before!.id] : [])
    const updated = steps.flatMap(({ after, before }) => after !== null && before !== null ? [after] : [])
    const created = steps.flatMap(({ after, before }) => before === null ? [after!] : [])
    if (removed.length > 0) yield* sql`DELETE FROM ${table} WHERE id = ANY(${removed}::uuid[])`
    if (updated.length > 0) {
      // Set aside first, under a shape no path has (it holds no slash), so that no update meets the one before.
      const moved = steps.flatMap(({ after, before }) =>
        after !== null && before !== null && Route.shapeOf(after.path) !== Route.shapeOf(before.path) ? [after.id] : []
      )
      if (moved.length > 0) {
        yield* sql`UPDATE ${table} SET path_shape = 'batch:' || id::text WHERE id = ANY(${moved}::uuid[])`
      }
      yield* sql`UPDATE ${table} AS t SET method = x.method, path = x.path, path_shape = x.path_shape,
          middleware = x.middleware, handler = x.handler, enabled = x.enabled, split = x.split,
          middleware_config = x.middleware_config, description = x.description, tags = x.tags, when_key = x.when_key,
          revision = x.revision
        FROM json_to_recordset(${rowsJson(updated)}::json) AS x(${sql.literal(ROW_TYPES)})
        WHERE t.id = x.id`
    }
    // The creates are a CTE of the log's statement, run whether or not it is read (as every CTE that changes rows).
    const inserted = created.length === 0 ? sql`` : sql`inserted AS (INSERT INTO ${table}
          (id, method, path, path_shape, middleware, handler, created_at, revision, enabled, split, middleware_config,
          description, tags, when_key)
        SELECT id, method, path, path_shape, middleware, handler, created_at, revision, enabled, split,
          middleware_config, description, tags, when_key
        FROM json_to_recordset(${rowsJson(created)}::json) AS x(${sql.literal(ROW_TYPES)})),`
    const end = steps[steps.length - 1]!.revision
    yield* sql`
      WITH ${inserted}
      changed AS (
        INSERT INTO ${sql(settings.history)}
          (revision, at, actor, action, route_id, before, after, batch, batch_end, batch_description)
        SELECT revision, ${change.at}, ${change.actor}, action, route_id, before, after, ${plan.batch}::uuid, ${end},
          ${description ?? null}::text
        FROM json_to_recordset(${entriesJson(steps)}::json)
          AS x(revision bigint, action text, route_id uuid, before jsonb, after jsonb)
        RETURNING revision
      ),
      ${Log.advance(store, base, change.dryRun)}
      SELECT count(*) FROM changed`
  })

// The method bound refused the batch (the database's trigger): the first operation that adds a method not stored.
const tooManyMethods = (store: Store, operations: ReadonlyArray<BatchOperation>) => {
  const { settings, sql } = store
  const methods = operations.flatMap((operation) =>
    operation.op === "create" ? [operation.route.method] : operation.op === "update" && operation.patch.method
      ? [operation.patch.method] :
      []
  )
  return Effect.flatMap(
    store.deadline.read(
      sql<{ method: string }>`${store.readMark}SELECT DISTINCT method FROM ${sql(settings.qualified)}
        WHERE method = ANY(${methods}::text[])`
    ),
    (rows) => {
      const stored = new Set(rows.map(({ method }) => method))
      const index = Math.max(
        0,
        operations.findIndex((operation) =>
          operation.op === "create"
            ? !stored.has(operation.route.method)
            : operation.op === "update" && operation.patch.method !== undefined &&
              !stored.has(operation.patch.method)
        )
      )
      const operation = operations[index]!
      const method = operation.op === "create"
        ? operation.route.method
        : (operation as { patch: Route.RoutePatch }).patch.method!
      return Effect.fail(new BatchRefused({ index, reason: new TooManyMethods({ method, limit: MAX_METHODS }) }))
    }
  )
}

/** Decides a change set and writes it, in the caller's transaction; `then` runs after the plan, before it is written. */
export const decideAndWrite = <E = never>(
  store: Store,
  operations: ReadonlyArray<BatchOperation>,
  options: BatchOptions,
  change: Log.Change,
  then: (plan: Batch.Plan) => Effect.Effect<void, E | SqlError> = () => Effect.void
): Effect.Effect<Batch.Plan, BatchRefused | E | SqlError> =>
  Effect.gen(function*() {
    const base = yield* Log.lock(store)
    const decided = Batch.plan(
      store.ids,
      operations,
      yield* known(store, operations),
      options,
      change.at.getTime(),
      base
    )
    if (Either.isLeft(decided)) return yield* decided.left
    yield* then(decided.right)
    yield* write(store, decided.right, change, base, options.description)
    return decided.right
  })

/** The steps of a plan as the witness of a write checks them. */
export const witness = (store: Store, change: Log.Change) => (plan: Batch.Plan) =>
  Witness.logged(
    store,
    plan.steps.map(({ after, before, revision }) => ({ revision, routeId: (after ?? before)!.id, at: change.at }))
  )

/** The refusal of a batch the database's method bound stopped, as the plan would give it. */
export const methodLimit =
  (store: Store, operations: ReadonlyArray<BatchOperation>) =>
  <A, E>(self: Effect.Effect<A, E>): Effect.Effect<A, E | BatchRefused | SqlError | StoreUnavailable> =>
    Effect.catchIf(
      self,
      (error): error is E & SqlError => store.isMethodLimit(error),
      () => tooManyMethods(store, operations)
    )

/** Applies a change set in one transaction of its own (or a savepoint of the host's). */
export const apply = (
  store: Store,
  operations: ReadonlyArray<BatchOperation>,
  options: BatchOptions,
  change: Log.Change
): Effect.Effect<Batch.Plan, BatchRefused | SqlError | StoreUnavailable> =>
  Log.write(
    store,
    decideAndWrite(store, operations, options, change),
    change.dryRun,
    witness(store, change)
  ).pipe(methodLimit(store, operations))
