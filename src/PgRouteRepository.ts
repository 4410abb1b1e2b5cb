/**
 * The Postgres store. It asks for the host's `SqlClient` (built with `@effect/sql-pg`) and brings its own
 * migrations, kept in a migrations table of its own.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { ConfigError } from "effect"
import { Cause, Clock, Config, Context, Duration, Effect, Exit, FiberId, Layer, Runtime } from "effect"
import * as Route from "./Route.js"
import * as RouteRepository from "./RouteRepository.js"

/**
 * @since 0.1.0
 */
export interface Options {
  /** Table that holds the routes. Default `route_registry_routes`. */
  readonly table?: string | undefined
  /** Schema of that table. Default: the connection's `search_path` (usually `public`). */
  readonly schema?: string | undefined
  /**
   * Longest time one store operation may take, in real time, before it is interrupted and fails with
   * `StoreUnavailable`. Default 5 seconds.
   */
  readonly queryTimeout?: Duration.DurationInput | undefined
}

/**
 * @since 0.1.0
 */
export const DEFAULT_TABLE = "route_registry_routes"

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,47}$/

const resolve = (options: Options) => {
  const table = options.table ?? DEFAULT_TABLE
  for (const [name, value] of [["table", table], ["schema", options.schema]] as const) {
    if (value !== undefined && !IDENTIFIER.test(value)) {
      throw new Error(
        `PgRouteRepository: ${name} ${
          JSON.stringify(value)
        } must be a lowercase SQL identifier of at most 48 characters ([a-z_][a-z0-9_]*)`
      )
    }
  }
  const qualify = (name: string) => options.schema === undefined ? name : `${options.schema}.${name}`
  return {
    table,
    schema: options.schema,
    qualified: qualify(table),
    migrationsTable: qualify(`${table}_migrations`),
    queryTimeout: Duration.decode(options.queryTimeout ?? Duration.seconds(5))
  }
}

// SQLSTATE classes that mean the database cannot serve us right now: connection exception (08), insufficient
// resources (53), operator intervention such as a shutdown or a cancelled statement (57), system error (58), and
// serialization failure or deadlock (40001, 40P01), which a retry resolves.
const UNAVAILABLE_SQLSTATE = /^(08|53|57|58)|^40001$|^40P01$/
const UNAVAILABLE_NODE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ECONNABORTED"
])
// node-postgres reports lost or refused connections with plain Errors that carry no code.
const UNAVAILABLE_MESSAGE =
  /connection terminated|connection ended|timeout exceeded when trying to connect|not queryable|terminating connection|cannot connect now|connection refused|connection.*closed/i

/**
 * `true` when an error (or one of its causes) says the database is unreachable, shutting down, overloaded or
 * timed out, rather than that the query itself is wrong.
 *
 * @since 0.1.0
 */
export const isUnavailable = (error: unknown): boolean => {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    if (typeof current !== "object") return false
    const { cause, code, message } = current as { code?: unknown; message?: unknown; cause?: unknown }
    if (typeof code === "string" && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_NODE_CODES.has(code))) return true
    if (typeof message === "string" && UNAVAILABLE_MESSAGE.test(message)) return true
    if (current instanceof AggregateError && current.errors.some(isUnavailable)) return true
    current = cause
  }
  return false
}

/** @internal */
const toStoreError = (error: SqlError) =>
  isUnavailable(error)
    ? Effect.fail(new RouteRepository.StoreUnavailable({ reason: "the database could not be reached", cause: error }))
    : Effect.die(error)

/**
 * Runs `effect`, failing with `onTimeout()` if it has not finished within `millis` of real time (and interrupting
 * it). `Effect.timeoutFail` races through two forked fibers and a `Clock` sleep per call, which cost a third of a
 * store's throughput (bench/); here one fiber, forked with the caller's fiber refs (so a host's transaction and
 * span still apply), races a plain timer.
 */
const withDeadline = <A, E, E2>(
  effect: Effect.Effect<A, E>,
  millis: number,
  onTimeout: () => E2,
  onInterrupted: () => E2
): Effect.Effect<A, E | E2> =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) =>
    Effect.async<A, E | E2>((resume) => {
      const fiber = Runtime.runFork(runtime)(effect)
      const timer = setTimeout(() => {
        // Answer first: interrupting may complete the fiber at once (on an immediate scheduler), and only the
        // first resume counts.
        resume(Effect.fail(onTimeout()))
        fiber.unsafeInterruptAsFork(FiberId.none)
      }, millis)
      fiber.addObserver((exit) => {
        clearTimeout(timer)
        // Interrupted by anything but this caller (a pool or runtime shutting down): the store could not answer.
        resume(Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? Effect.fail(onInterrupted()) : exit)
      })
      return Effect.sync(() => {
        clearTimeout(timer)
        fiber.unsafeInterruptAsFork(FiberId.none)
      })
    }))

/**
 * The statements of each migration, in order. Exposed so hosts that manage their schema with another tool can
 * apply the same DDL.
 *
 * @since 0.1.0
 */
export const migrations = (options: Options = {}) => {
  const { qualified, table } = resolve(options)
  return {
    "1_create_routes": Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`CREATE TABLE ${sql(qualified)} (
        id uuid PRIMARY KEY,
        method text NOT NULL,
        path text NOT NULL,
        path_shape text NOT NULL,
        middleware text[] NOT NULL,
        handler text NOT NULL,
        created_at timestamptz NOT NULL,
        CONSTRAINT ${sql(`${table}_method_shape_key`)} UNIQUE (method, path_shape)
      )`)
  }
}

// Codes Postgres gives the loser when two processes create the same object at once.
const isCreateRace = (error: SqlError) => {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return code === "23505" || code === "42P07" || code === "42710"
}

/**
 * Applies the store's migrations. Safe when several processes start at once: the migrator runs them in one
 * transaction that locks its migrations table, and the one race it leaves (two processes creating that table
 * at the same moment) is retried.
 *
 * @since 0.1.0
 */
export const migrate = (
  options: Options = {}
): Effect.Effect<void, RouteRepository.StoreUnavailable | Migrator.MigrationError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { migrationsTable, schema } = resolve(options)
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const createSchema = schema === undefined
      ? Effect.void
      : Effect.asVoid(sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`)
    yield* Effect.zipRight(
      createSchema,
      Migrator.make({})({ loader: Migrator.fromRecord(migrations(options)), table: migrationsTable })
    ).pipe(
      Effect.retry({ times: 5, while: (error) => error._tag === "SqlError" && isCreateRace(error) }),
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.catchTag("SqlError", toStoreError)
    )
  })

interface RouteRow {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<string>
  readonly handler: string
  readonly created_at: Date
}

// Rows were validated when they were written, so they are trusted as routes.
const fromRow = (row: RouteRow): Route.Route =>
  new Route.Route({
    id: row.id as Route.RouteId,
    method: row.method as Route.HttpMethod,
    path: row.path as Route.RoutePath,
    middleware: row.middleware as ReadonlyArray<Route.MiddlewareName>,
    handler: row.handler as Route.HandlerName,
    createdAt: row.created_at
  }, true)

/**
 * Builds the store over the `SqlClient` in context. It does not migrate: use `layer`, or call `migrate` first.
 *
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<Context.Tag.Service<RouteRepository.RouteRepository>, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { qualified, queryTimeout } = resolve(options)
    const ids = yield* RouteRepository.RouteIdGenerator
    // The host's client may rename result columns (transformResultNames); our rows keep their SQL names.
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const table = sql(qualified)

    const millis = Duration.toMillis(queryTimeout)
    const timedOut = () =>
      new RouteRepository.StoreUnavailable({
        reason: `the database did not answer within ${Duration.format(queryTimeout)}`
      })

    const interrupted = () => new RouteRepository.StoreUnavailable({ reason: "the database operation was interrupted" })

    const guard = <A, E>(effect: Effect.Effect<A, E | SqlError>) =>
      withDeadline(
        Effect.catchIf(effect, (e): e is SqlError => (e as { _tag?: unknown })._tag === "SqlError", toStoreError),
        millis,
        timedOut,
        interrupted
      )

    return RouteRepository.RouteRepository.of({
      create: (input) =>
        guard(Effect.gen(function*() {
          const route = RouteRepository.makeRoute(ids, input, yield* Clock.currentTimeMillis)
          const shape = Route.shapeOf(route.path)
          // The unique index decides conflicts: of concurrent inserts of one shape exactly one returns a row.
          const inserted = yield* sql<{ id: string }>`
            INSERT INTO ${table} (id, method, path, path_shape, middleware, handler, created_at)
            VALUES (${route.id}, ${route.method}, ${route.path}, ${shape}, ${route.middleware as unknown as Array<
            string
          >},
                    ${route.handler}, ${route.createdAt})
            ON CONFLICT (method, path_shape) DO NOTHING
            RETURNING id`
          if (inserted.length > 0) return route
          const existing = yield* sql<{ id: string }>`
            SELECT id FROM ${table} WHERE method = ${route.method} AND path_shape = ${shape}`
          return yield* Effect.fail(
            new RouteRepository.RouteConflict({
              method: route.method,
              path: route.path,
              conflictingRouteId: existing[0]?.id ?? "unknown"
            })
          )
        })),
      findById: (id) =>
        Route.isRouteId(id)
          ? guard(
            Effect.flatMap(
              sql<RouteRow>`
                SELECT id, method, path, middleware, handler, created_at FROM ${table} WHERE id = ${id}`,
              (rows) =>
                rows.length === 0
                  ? Effect.fail(new RouteRepository.RouteNotFound({ id }))
                  : Effect.succeed(fromRow(rows[0]!))
            )
          )
          : Effect.fail(new RouteRepository.RouteNotFound({ id }))
    })
  })

/**
 * The Postgres store as a layer: applies the migrations, then serves from the `SqlClient` in context.
 *
 * @since 0.1.0
 */
export const layer = (
  options: Options = {}
): Layer.Layer<
  RouteRepository.RouteRepository,
  RouteRepository.StoreUnavailable | Migrator.MigrationError,
  SqlClient.SqlClient
> => {
  resolve(options) // refuse a bad table or schema name when the layer is made, not on first use
  return Layer.effect(RouteRepository.RouteRepository, Effect.zipRight(migrate(options), make(options)))
}

/**
 * `layer` with its options read from `Config`.
 *
 * @since 0.1.0
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<
  RouteRepository.RouteRepository,
  RouteRepository.StoreUnavailable | Migrator.MigrationError | ConfigError.ConfigError,
  SqlClient.SqlClient
> => Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))
