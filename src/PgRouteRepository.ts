/**
 * The Postgres store. It asks for the host's `SqlClient` (built with `@effect/sql-pg`) and brings its own
 * migrations, kept in a migrations table of its own.
 *
 * @since 0.1.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { ConfigError } from "effect"
import { Clock, Config, Context, Duration, Effect, Either, Layer, Option } from "effect"
import * as ChangeSet from "./internal/pg/changeSet.js"
import * as Connect from "./internal/pg/connect.js"
import * as Deadline from "./internal/pg/deadline.js"
import * as Errors from "./internal/pg/errors.js"
import * as ChangeFeed from "./internal/pg/feed.js"
import * as Group from "./internal/pg/group.js"
import * as Keys from "./internal/pg/keys.js"
import * as Log from "./internal/pg/log.js"
import * as PgOptions from "./internal/pg/options.js"
import * as Restore from "./internal/pg/restore.js"
import * as Row from "./internal/pg/row.js"
import * as Schema from "./internal/pg/schema.js"
import * as Store from "./internal/pg/store.js"
import * as Witness from "./internal/pg/witness.js"
import * as Actor from "./internal/store/actor.js"
import * as RouteRepository from "./RouteRepository.js"

/**
 * @since 0.1.0
 */
export type Options = PgOptions.Options

/**
 * @since 0.1.0
 */
export const DEFAULT_TABLE: string = PgOptions.DEFAULTS.table

/**
 * `true` when an error (or one of its causes) says the database is unreachable, shutting down, overloaded or
 * timed out, rather than that the query itself is wrong.
 *
 * @since 0.1.0
 */
export const isUnavailable: (error: unknown) => boolean = Errors.isUnavailable

/**
 * The statements of each migration, in order. Exposed so hosts that manage their schema with another tool can
 * apply the same DDL.
 *
 * @since 0.1.0
 */
export const migrations = Schema.migrations

/**
 * Drops everything the migrations made: the routes with their history, the functions and the migrations table.
 *
 * @since 0.2.0
 */
export const uninstall: (
  options?: Options
) => Effect.Effect<void, RouteRepository.StoreUnavailable, SqlClient.SqlClient> = Schema.uninstall

/**
 * Applies the store's migrations. Safe when several processes start at once: the migrator runs them in one
 * transaction that locks its migrations table, and the one race it leaves (two processes creating that table
 * at the same moment) is retried.
 *
 * @since 0.1.0
 */
export const migrate: (
  options?: Options
) => Effect.Effect<void, RouteRepository.StoreUnavailable | Migrator.MigrationError, SqlClient.SqlClient> =
  Schema.migrate

// Postgres text cannot hold NUL, and no stored route does: a filter value holding one matches nothing.
const holdsNul = (value: string | undefined) => value !== undefined && value.includes("\u0000")

const EMPTY_PAGE: RouteRepository.Page = { items: [], hasMore: false }
const EMPTY_HISTORY: RouteRepository.HistoryPage = { items: [], hasMore: false }

/**
 * What the Postgres store offers beside it (`makeContext`, `layer`).
 *
 * @since 0.5.0
 */
export type Capability =
  | RouteRepository.Feed
  | RouteRepository.Idempotent
  | RouteRepository.ChangeLog
  | RouteRepository.Restorable
  | RouteRepository.Batches

/**
 * `make` with what the store offers beside it: its change feed (`RouteRepository.Feed`), through which a route table
 * hears what other processes change, its creates once per idempotency key (`RouteRepository.Idempotent`), its change
 * log (`ChangeLog`), restores (`Restorable`) and change sets (`Batches`). `Layer.effectContext(makeContext(options))`
 * is `layer` without its migrations; `RoutingHandler.makeWith` takes the context as it is.
 *
 * @since 0.5.0
 */
export const makeContext = (
  options: Options = {}
): Effect.Effect<
  Context.Context<RouteRepository.RouteRepository | Capability>,
  never,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const settings = yield* Effect.orDie(PgOptions.resolve(options))
    const { qualified, queryTimeout, table: tableName } = settings
    // The host's client may rename result columns (transformResultNames); our rows keep their SQL names.
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const pg = Option.getOrUndefined(yield* Effect.serviceOption(PgClient.PgClient))
    const deadline = Deadline.make({
      sql,
      millis: Duration.toMillis(queryTimeout),
      timedOut: () =>
        new RouteRepository.StoreUnavailable({
          reason: `the database did not answer within ${Duration.format(queryTimeout)}`
        }),
      interrupted: () => new RouteRepository.StoreUnavailable({ reason: "the database operation was interrupted" }),
      readOnly: () =>
        new RouteRepository.StoreUnavailable({
          reason: `${Errors.READ_ONLY_REASON}, and no primary answered within ${Duration.format(queryTimeout)}`
        }),
      table: qualified,
      connect: pg === undefined ? undefined : Connect.fromConfig(pg.config)
    })
    const store: Store.Store = {
      sql,
      settings,
      ids: yield* RouteRepository.RouteIdGenerator,
      columns: Row.columns(sql),
      readMark: sql.literal(deadline.mark),
      deadline,
      isShapeConflict: Errors.isShapeConflict(`${tableName}_method_shape_key`),
      isMethodLimit: Errors.isMethodLimit(`${tableName}_method_limit`)
    }
    // A read under the store's deadline (a late read changes nothing), and a write in a transaction of its own that
    // is never committed past it (internal/pg/deadline.ts).
    const guard = <A, E>(effect: Effect.Effect<A, E | SqlError>) => deadline.read(Errors.storeErrors(effect))
    const findBatch = Store.findBatch(store)
    // Concurrent changes share a transaction (internal/pg/group.ts); a dry run, and a change in a host's transaction,
    // run alone.
    const group = Group.make(store)
    const grouped = <A, E>(change: Log.Change, inGroup: () => Effect.Effect<A, E>, alone: Effect.Effect<A, E>) =>
      change.dryRun === true ? alone : Store.unlessInTransaction(Effect.suspend(inGroup), alone)
    const feed = ChangeFeed.make({ pg, sql, settings, columns: store.columns, guard, readMark: store.readMark })
    // A change as its log entry records it: who makes it, and when (read from the clock, as a create's `createdAt`).
    const changeOf = <A, E, R>(
      options: RouteRepository.WriteOptions | undefined,
      then: (change: Log.Change) => Effect.Effect<A, E, R>
    ) =>
      Actor.withActor(
        options,
        (actor) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => then({ actor, at: new Date(now), dryRun: options?.dryRun }))
      )
    // A dry run changes nothing, so no one is told of it.
    const unlessDry =
      <A, E, R>(options: RouteRepository.WriteOptions | undefined, tell: (a: A) => Effect.Effect<void>) =>
      (effect: Effect.Effect<A, E, R>) => options?.dryRun === true ? effect : Effect.tap(effect, tell)

    const repository = RouteRepository.RouteRepository.of({
      create: (input, options) =>
        changeOf(options, (change) => {
          const route = RouteRepository.makeRoute(store.ids, input, change.at.getTime())
          return Errors.storeErrors(grouped(
            change,
            () => group.create(route, change),
            Log.write(store, Store.create(store, route, change), change.dryRun, Witness.route(store, change.at))
          ))
        }).pipe(unlessDry(options, (route) => feed.announce({ upserted: route }))),
      findById: (id) =>
        Store.withRouteId(
          id,
          (routeId) =>
            deadline.read(Store.unlessInTransaction(
              findBatch(routeId),
              Effect.flatMap(
                Store.readRoute(store, routeId),
                (row) => row === undefined ? Store.notFound(id) : Effect.succeed(Row.decode(row))
              )
            ))
        ),
      list: (query) =>
        [query.method, query.handler, query.middleware, query.pathPrefix].some(holdsNul)
          ? Effect.succeed(EMPTY_PAGE)
          : guard(Store.list(store, query)),
      update: (id, patch, precondition, options) =>
        changeOf(
          options,
          (change) =>
            Store.withRouteId(id, (routeId) => {
              const one: Store.Updating = { id: routeId, patch, precondition, change }
              return grouped(change, () => group.update(one), Store.update(store, one))
            })
        ).pipe(unlessDry(options, (route) => feed.announce({ upserted: route }))),
      // Removals are what the feed keeps history of, so the process that removes prunes it.
      remove: (id, precondition, options) =>
        changeOf(
          options,
          (change) =>
            Store.withRouteId(id, (routeId) =>
              grouped(
                change,
                () => group.remove(routeId, precondition, change),
                Store.remove(store, routeId, precondition, change)
              ))
        ).pipe(unlessDry(options, () => Effect.zipRight(feed.announce({ removed: id }), feed.prune)))
    })
    const changeLog = RouteRepository.ChangeLog.of({
      history: (query) => [query.actor].some(holdsNul) ? Effect.succeed(EMPTY_HISTORY) : guard(Log.page(store, query)),
      logAfter: (revision, limit) => guard(Log.after(store, revision, limit))
    })
    const restorable = RouteRepository.Restorable.of({
      restore: (id, revision, precondition, options) =>
        changeOf(
          options,
          (change) =>
            Store.withRouteId(id, (routeId) => {
              const restoring: Restore.Restoring = { id: routeId, revision, precondition, change }
              return grouped(change, () => group.restore(restoring), Restore.restore(store, restoring))
            })
        ).pipe(unlessDry(options, ({ route }) => feed.announce({ upserted: route })))
    })
    const batches = RouteRepository.Batches.of({
      // Announced as "changed": every process reads the whole batch from the feed, in one step. A replay wrote nothing.
      applyBatch: (operations, options = {}) =>
        changeOf(options, (change) => {
          const idempotency = options.dryRun === true ? undefined : options.idempotency
          return Errors.storeErrors(
            idempotency === undefined
              ? ChangeSet.apply(store, operations, options, change)
              : deadline.write(Either.match({ onLeft: () => undefined, onRight: ChangeSet.witness(store, change) }))(
                Keys.applyBatchIdempotent(store, operations, options, idempotency, change)
              ).pipe(Effect.flatten, ChangeSet.methodLimit(store, operations))
          )
        }).pipe(
          Effect.map(({ steps: _, ...applied }) => applied),
          unlessDry(
            options,
            ({ replayed }) => replayed === true ? Effect.void : Effect.zipRight(feed.announceChanged, feed.prune)
          )
        )
    })
    // Announced only when this call created a route.
    const idempotent = RouteRepository.Idempotent.of({
      createIdempotent: (input, idempotency, options) =>
        Effect.tap(
          changeOf(options, (change) =>
            Errors.storeErrors(
              deadline.write<RouteRepository.Remembered>(
                // A replay wrote nothing; a conflict, only its key, whose loss leaves its answer true.
                ({ outcome, replayed }) =>
                  replayed || Either.isLeft(outcome) ? undefined : Witness.route(store, change.at)(outcome.right)
              )(Keys.createIdempotent(store, input, idempotency, change))
            )),
          ({ outcome, replayed }) =>
            replayed || Either.isLeft(outcome) ? Effect.void : feed.announce({ upserted: outcome.right })
        )
    })
    return Context.make(RouteRepository.RouteRepository, repository).pipe(
      Context.add(RouteRepository.Feed, feed.changes),
      Context.add(RouteRepository.Idempotent, idempotent),
      Context.add(RouteRepository.ChangeLog, changeLog),
      Context.add(RouteRepository.Restorable, restorable),
      Context.add(RouteRepository.Batches, batches)
    )
  })

/**
 * Builds the store over the `SqlClient` in context. It does not migrate: use `layer`, or call `migrate` first. What
 * it offers beside it (its change feed, idempotent creates, change log, restores, change sets) comes with
 * `makeContext` and `layer`.
 *
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<Context.Tag.Service<RouteRepository.RouteRepository>, never, SqlClient.SqlClient> =>
  Effect.map(makeContext(options), Context.get(RouteRepository.RouteRepository))

/**
 * The Postgres store as a layer: applies the migrations, then serves from the `SqlClient` in context.
 *
 * @since 0.1.0
 */
export const layer = (
  options: Options = {}
): Layer.Layer<
  RouteRepository.RouteRepository | Capability,
  RouteRepository.StoreUnavailable | Migrator.MigrationError,
  SqlClient.SqlClient
> => {
  PgOptions.resolveOrThrow(options) // refuse a bad table or schema name when the layer is made, not on first use
  return Layer.effectContext(Effect.zipRight(migrate(options), makeContext(options)))
}

/**
 * `layer` with its options read from `Config`.
 *
 * @since 0.1.0
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<
  RouteRepository.RouteRepository | Capability,
  RouteRepository.StoreUnavailable | Migrator.MigrationError | ConfigError.ConfigError,
  SqlClient.SqlClient
> => Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))
