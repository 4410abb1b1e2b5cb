/**
 * The Postgres store. It asks for the host's `SqlClient` (built with `@effect/sql-pg`) and brings its own
 * migrations, kept in a migrations table of its own.
 *
 * @since 0.1.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { ConfigError } from "effect"
import { Clock, Config, Context, Duration, Effect, Either, Exit, Layer, Option } from "effect"
import * as Batch from "./internal/batch.js"
import * as Limits from "./internal/limits.js"
import * as ChangeFeed from "./internal/pgChangeFeed.js"
import * as Connect from "./internal/pgConnect.js"
import * as Deadline from "./internal/pgDeadline.js"
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
  /**
   * Whether processes tell each other of their changes with `LISTEN`/`NOTIFY`, so every route table hears of a change
   * within milliseconds. Turn it off for a Postgres-wire engine without them (CockroachDB, YugabyteDB): tables then
   * follow by polling alone, every `pollInterval`. Default `true`.
   */
  readonly notifications?: boolean | undefined
  /**
   * How often a route table reads the changes when nothing woke it: the longest a change takes to reach the other
   * processes without notifications, and how often a table confirms it is current. Default 500 milliseconds.
   */
  readonly pollInterval?: Duration.DurationInput | undefined
  /**
   * How long the ids of removed routes are kept for processes that were away. A process away longer loads every
   * route again when it is back. Default 10 minutes.
   */
  readonly changeRetention?: Duration.DurationInput | undefined
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
    sequence: qualify(`${table}_revision_seq`),
    removals: qualify(`${table}_removals`),
    feed: qualify(`${table}_feed`),
    stampFunction: qualify(`${table}_stamp`),
    removalFunction: qualify(`${table}_log_removal`),
    idempotencyKeys: qualify(`${table}_idempotency`),
    methodBoundFunction: qualify(`${table}_bound_methods`),
    limits: qualify(`${table}_limits`),
    // One channel per table name: two schemas with tables of one name only wake each other's tables for nothing.
    channel: `${table}_changes`,
    queryTimeout: Duration.decode(options.queryTimeout ?? Duration.seconds(5)),
    notifications: options.notifications ?? true,
    pollInterval: Duration.decode(options.pollInterval ?? Duration.millis(500)),
    changeRetention: Duration.decode(options.changeRetention ?? Duration.minutes(10))
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

// The next value of the store's revision sequence, a store-wide counter: every change takes the next one. The
// sequence is named by a parameter (nextval takes its name as text), so no SQL text is built from strings.
const nextRevision = (sql: SqlClient.SqlClient, sequence: string) => sql`nextval(${sequence})`

/**
 * The statements of each migration, in order. Exposed so hosts that manage their schema with another tool can
 * apply the same DDL.
 *
 * @since 0.1.0
 */
export const migrations = (options: Options = {}) => {
  const {
    feed,
    idempotencyKeys,
    limits,
    methodBoundFunction,
    qualified,
    removalFunction,
    removals,
    sequence,
    stampFunction,
    table
  } = resolve(options)
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
      )`),
    "2_add_revisions_and_list_indexes": Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.all([
        // An identity column gives every existing row a value of its own from the sequence as it is added, keeps
        // inserts by hosts still on release 0.1 (which name no revision) working while they share the database, and
        // is dropped with the table.
        sql`ALTER TABLE ${sql(qualified)}
          ADD COLUMN revision bigint GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME ${sql(sequence)})`,
        // Each filter of a listing reads an index: (method, id) and (handler, id) in page order, GIN for a middleware
        // name, and byte order ("C") on the path for a prefix (starts_with uses it).
        sql`CREATE INDEX ${sql(`${table}_method_id_idx`)} ON ${sql(qualified)} (method, id)`,
        sql`CREATE INDEX ${sql(`${table}_handler_id_idx`)} ON ${sql(qualified)} (handler, id)`,
        sql`CREATE INDEX ${sql(`${table}_middleware_idx`)} ON ${sql(qualified)} USING gin (middleware)`,
        sql`CREATE INDEX ${sql(`${table}_path_idx`)} ON ${sql(qualified)} (path COLLATE "C")`
      ], { discard: true })),
    // The change feed (see `ChangeFeed` below): every row carries the id of the transaction that wrote it last, and
    // every removal leaves the route's id with the id of the transaction that removed it. Triggers stamp them, so
    // writes from anywhere (release 0.1 hosts, an operator's SQL) reach every table too.
    "3_add_change_feed": Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.all([
        sql`ALTER TABLE ${sql(qualified)} ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id()`,
        sql`CREATE INDEX ${sql(`${table}_txid_idx`)} ON ${sql(qualified)} (txid)`,
        sql`CREATE TABLE ${sql(removals)} (
          id uuid NOT NULL,
          txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
          removed_at timestamptz NOT NULL DEFAULT now()
        )`,
        sql`CREATE INDEX ${sql(`${table}_removals_txid_idx`)} ON ${sql(removals)} (txid)`,
        sql`CREATE INDEX ${sql(`${table}_removals_removed_at_idx`)} ON ${sql(removals)} (removed_at)`,
        // One row: the newest transaction whose removals were pruned. A reader whose cursor is older reloads.
        sql`CREATE TABLE ${sql(feed)} (
          single boolean PRIMARY KEY DEFAULT true CHECK (single),
          pruned_through xid8 NOT NULL DEFAULT '0'
        )`,
        sql`INSERT INTO ${sql(feed)} DEFAULT VALUES`,
        // The functions hold no names: the removal log is found from the trigger's own table.
        sql`CREATE FUNCTION ${sql(stampFunction)}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN NEW.txid := pg_current_xact_id(); RETURN NEW; END $$`,
        sql`CREATE TRIGGER ${sql(`${table}_stamp`)} BEFORE UPDATE ON ${sql(qualified)}
          FOR EACH ROW EXECUTE FUNCTION ${sql(stampFunction)}()`,
        sql`CREATE FUNCTION ${sql(removalFunction)}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            EXECUTE format('INSERT INTO %I.%I (id) VALUES ($1)', TG_TABLE_SCHEMA, TG_TABLE_NAME || '_removals')
              USING OLD.id;
            RETURN NULL;
          END $$`,
        sql`CREATE TRIGGER ${sql(`${table}_log_removal`)} AFTER DELETE ON ${sql(qualified)}
          FOR EACH ROW EXECUTE FUNCTION ${sql(removalFunction)}()`
      ], { discard: true })),
    // The first answer to each idempotency key, by principal and key. An expired row is ignored by reads and deleted
    // by later keyed creates (the expiry index finds them), so no background job is needed.
    "4_idempotency_keys": Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.all([
        sql`CREATE TABLE ${sql(idempotencyKeys)} (
          principal text NOT NULL,
          key text NOT NULL,
          fingerprint text NOT NULL,
          outcome jsonb NOT NULL,
          expires_at timestamptz NOT NULL,
          PRIMARY KEY (principal, key)
        )`,
        sql`CREATE INDEX ${sql(`${table}_idem_expires`)} ON ${sql(idempotencyKeys)} (expires_at)`
      ], { discard: true })),
    // A key keeps no more than its answer needs (bench/idempotency.ts): a SHA-256 digest of the request instead of the
    // request, and of the first answer what the request does not say (`RouteRepository.FirstAnswer`). Keys already
    // stored keep their meaning: the digest is taken of the fingerprint text they hold, as the store takes it.
    "5_compact_idempotency_keys": Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.all([
        sql`ALTER TABLE ${sql(idempotencyKeys)}
          ADD COLUMN digest bytea, ADD COLUMN route_id uuid, ADD COLUMN created_at timestamptz,
          ADD COLUMN revision bigint`,
        sql`UPDATE ${sql(idempotencyKeys)} SET
          digest = sha256(convert_to(fingerprint, 'UTF8')),
          route_id = COALESCE(outcome #>> '{route,id}', outcome #>> '{conflict,conflictingRouteId}')::uuid,
          created_at = (outcome #>> '{route,createdAt}')::timestamptz,
          revision = (outcome #>> '{route,revision}')::bigint`,
        sql`ALTER TABLE ${sql(idempotencyKeys)} DROP COLUMN fingerprint, DROP COLUMN outcome`,
        sql`ALTER TABLE ${sql(idempotencyKeys)} RENAME COLUMN digest TO fingerprint`,
        sql`ALTER TABLE ${sql(idempotencyKeys)}
          ALTER COLUMN fingerprint SET NOT NULL, ALTER COLUMN route_id SET NOT NULL,
          ADD CONSTRAINT ${sql(`${table}_idem_outcome`)} CHECK ((created_at IS NULL) = (revision IS NULL))`
      ], { discard: true })),
    // At most MAX_METHODS distinct methods (their list is a 405's Allow header), enforced by the database for every
    // writer. A row of a stored method locks a route of that method (FOR KEY SHARE), so the method stays stored until
    // the row's transaction ends, and takes no other lock: writes of stored methods never wait for one another nor
    // for a writer adding a method. A row adding a method takes a transaction advisory lock, waited for, then counts
    // the methods in a snapshot taken once it holds it (each statement of a plpgsql function takes its own): the
    // writers adding methods are decided one after the other, across processes, and each counts every method a
    // concurrent write relies on (its route is locked in place). The count stops at the bound: a walk of the (method,
    // id) index, one step per method. A method that passed stays so until the transaction ends, so the other rows of a
    // batch with it skip the check (a transaction-local setting lists them). The bound is a row of its own table,
    // written from MAX_METHODS.
    "6_bound_distinct_methods": Effect.flatMap(SqlClient.SqlClient, (sql) => {
      const pin = sql`SELECT 1 FROM ${sql(qualified)} WHERE method = NEW.method LIMIT 1 FOR KEY SHARE`
      return Effect.all([
        sql`CREATE TABLE ${sql(limits)} (
          single boolean PRIMARY KEY DEFAULT true CHECK (single),
          max_methods integer NOT NULL
        )`,
        sql`INSERT INTO ${sql(limits)} (max_methods) VALUES (${Limits.MAX_METHODS})`,
        sql`CREATE FUNCTION ${sql(methodBoundFunction)}() RETURNS trigger LANGUAGE plpgsql AS $$
          DECLARE
            setting text := 'route_registry.methods_' || TG_RELID;
            passed text := coalesce(current_setting(setting, true), '');
            entry text := '|' || NEW.method || '|';
            leaving uuid := CASE WHEN TG_OP = 'UPDATE' THEN OLD.id END;
            bound integer;
            methods integer;
          BEGIN
            IF TG_OP = 'UPDATE' AND NEW.method = OLD.method THEN RETURN NEW; END IF;
            IF strpos(passed, entry) > 0 THEN RETURN NEW; END IF;
            PERFORM 1 FROM (${pin}) AS stored;
            IF NOT FOUND THEN
              PERFORM pg_advisory_xact_lock(hashtextextended(TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME || ' methods', 0));
              -- Stored meanwhile by a writer that held the lock before: then it is locked in place like any other.
              PERFORM 1 FROM (${pin}) AS stored;
              IF NOT FOUND THEN
                SELECT max_methods INTO bound FROM ${sql(limits)};
                WITH RECURSIVE distinct_methods(method) AS (
                  (SELECT method FROM ${sql(qualified)} WHERE id IS DISTINCT FROM leaving ORDER BY method LIMIT 1)
                  UNION ALL
                  SELECT (SELECT r.method FROM ${sql(qualified)} AS r
                          WHERE r.method > d.method AND r.id IS DISTINCT FROM leaving ORDER BY r.method LIMIT 1)
                  FROM distinct_methods AS d WHERE d.method IS NOT NULL
                )
                SELECT count(*) INTO methods
                FROM (SELECT 1 FROM distinct_methods WHERE method IS NOT NULL LIMIT bound) AS counted;
                IF methods >= bound THEN
                  RAISE EXCEPTION 'the registry stores % distinct methods, the most it holds, and % is not one of them',
                    methods, NEW.method
                    USING ERRCODE = 'check_violation', CONSTRAINT = TG_TABLE_NAME || '_method_limit';
                END IF;
              END IF;
            END IF;
            PERFORM set_config(setting, passed || entry, true);
            RETURN NEW;
          END $$`,
        sql`CREATE TRIGGER ${sql(`${table}_bound_methods`)} BEFORE INSERT OR UPDATE OF method ON ${sql(qualified)}
          FOR EACH ROW EXECUTE FUNCTION ${sql(methodBoundFunction)}()`
      ], { discard: true })
    })
  }
}

/**
 * Drops everything the migrations made: the routes with their history, the functions and the migrations table.
 *
 * @since 0.2.0
 */
export const uninstall = (
  options: Options = {}
): Effect.Effect<void, RouteRepository.StoreUnavailable, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const {
      feed,
      idempotencyKeys,
      limits,
      methodBoundFunction,
      migrationsTable,
      qualified,
      removalFunction,
      removals,
      stampFunction
    } = resolve(options)
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* Effect.all([
      sql`DROP TABLE IF EXISTS ${sql(qualified)}, ${sql(removals)}, ${sql(feed)}, ${sql(idempotencyKeys)}, ${
        sql(limits)
      }, ${sql(migrationsTable)}`,
      sql`DROP FUNCTION IF EXISTS ${sql(stampFunction)}(), ${sql(removalFunction)}(), ${sql(methodBoundFunction)}()`
    ], { discard: true }).pipe(Effect.catchTag("SqlError", toStoreError))
  })

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
  /** A bigint: node-postgres gives a string unless the host's client parses it. */
  readonly revision: string | number | bigint
}

// The columns of a RouteRow, in every statement that reads routes.
const routeColumns = (sql: SqlClient.SqlClient) => sql`id, method, path, middleware, handler, created_at, revision`

// Rows were validated when they were written, so they are trusted as routes.
const fromRow = (row: RouteRow): Route.StoredRoute =>
  new Route.StoredRoute({
    id: row.id as Route.RouteId,
    method: row.method as Route.HttpMethod,
    path: row.path as Route.RoutePath,
    middleware: row.middleware as ReadonlyArray<Route.MiddlewareName>,
    handler: row.handler as Route.HandlerName,
    createdAt: row.created_at,
    revision: Number(row.revision)
  }, true)

const fromJson = (row: ChangeFeed.JsonRow): Route.StoredRoute =>
  fromRow({ ...row, created_at: new Date(row.created_at) })

// A route as a row of a batched insert (see `createBatch`), with its place in the batch.
const batchRow = (route: Route.Route, ord: number) => ({
  ord,
  id: route.id,
  method: route.method,
  path: route.path,
  path_shape: Route.shapeOf(route.path),
  middleware: route.middleware,
  handler: route.handler,
  created_at: route.createdAt.toISOString()
})

// Stored ids are lowercase canonical UUIDs, whose byte order is the order of the uuid type.
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

// Postgres text cannot hold NUL, and no stored route does: a filter value holding one matches nothing.
const holdsNul = (value: string | undefined) => value !== undefined && value.includes("\u0000")

const EMPTY_PAGE: RouteRepository.Page = { items: [], hasMore: false }

// What a key keeps (see migration 5): whether the request is the first one, and `RouteRepository.FirstAnswer`.
interface KeyRow {
  readonly same: boolean
  readonly route_id: string
  readonly created_at: Date | null
  /** A bigint: node-postgres gives a string unless the host's client parses it. */
  readonly revision: string | number | bigint | null
}

// The last instant a Date can hold (ECMA-262 §21.4.1.1).
const MAX_DATE_MILLIS = 8.64e15

const firstAnswerOf = (row: KeyRow): RouteRepository.FirstAnswer => ({
  routeId: row.route_id,
  createdAt: row.created_at === null ? undefined : row.created_at.getTime(),
  revision: row.revision === null ? undefined : Number(row.revision)
})

// A principal's live keys: how many, the bytes they count (`RouteRepository.keySize`) and when the oldest expires.
interface HeldRow {
  readonly keys: string | number
  readonly key_bytes: string | number
  /** `Infinity` for a key that never expires (node-postgres reads the timestamp `infinity` so). */
  readonly oldest: Date | number | null
}

/**
 * Builds the store over the `SqlClient` in context. It does not migrate: use `layer`, or call `migrate` first.
 *
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<Context.Tag.Service<RouteRepository.RouteRepository>, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const settings = resolve(options)
    const { qualified, queryTimeout, sequence, table: tableName } = settings
    const ids = yield* RouteRepository.RouteIdGenerator
    const client = yield* SqlClient.SqlClient
    // The host's client may rename result columns (transformResultNames); our rows keep their SQL names.
    const sql = client.withoutTransforms()
    const table = sql(qualified)
    const columns = routeColumns(sql)
    const revision = nextRevision(sql, sequence)
    const shapeConstraint = `${tableName}_method_shape_key`

    const millis = Duration.toMillis(queryTimeout)
    const timedOut = () =>
      new RouteRepository.StoreUnavailable({
        reason: `the database did not answer within ${Duration.format(queryTimeout)}`
      })

    const interrupted = () => new RouteRepository.StoreUnavailable({ reason: "the database operation was interrupted" })

    const pg = Option.getOrUndefined(yield* Effect.serviceOption(PgClient.PgClient))
    const deadline = Deadline.make({
      sql,
      millis,
      timedOut,
      interrupted,
      table: qualified,
      connect: pg === undefined ? undefined : Connect.fromConfig(pg.config)
    })
    // Starts every read statement: past the deadline, the store finds it by this and cancels it.
    const readMark = sql.literal(deadline.mark)
    const storeErrors = <A, E>(effect: Effect.Effect<A, E | SqlError>) =>
      Effect.catchIf(effect, (e): e is SqlError => (e as { _tag?: unknown })._tag === "SqlError", toStoreError)
    // A read under the store's deadline (a late read changes nothing), and a write in a transaction of its own that
    // is never committed past it (internal/pgDeadline.ts).
    const guard = <A, E>(effect: Effect.Effect<A, E | SqlError>) => deadline.read(storeErrors(effect))
    const { write } = deadline

    const notFound = (id: string) => Effect.fail(new RouteRepository.RouteNotFound({ id }))

    // A route id is a UUID: any other string is not found without asking the database (which would refuse it).
    const withRouteId = <A, E>(id: string, operation: (id: Route.RouteId) => Effect.Effect<A, E | SqlError>) =>
      Route.isRouteId(id) ? storeErrors(operation(id)) : notFound(id)

    // Revisions only ever are integers: others in a precondition name no revision (and would not parse as bigint).
    const revisionIn = (precondition: RouteRepository.Precondition | undefined) =>
      precondition?.ifMatch === undefined
        ? sql``
        : sql`AND revision = ANY(${precondition.ifMatch.filter(Number.isSafeInteger)})`

    const readRoute = (id: Route.RouteId) =>
      Effect.map(sql<RouteRow>`${readMark}SELECT ${columns} FROM ${table} WHERE id = ${id}`, (rows) => rows[0])

    // A conditional statement that changed nothing says only that the route was missing, did not meet the
    // precondition, or needed no change. One read decides which; when it shows none of them (the route changed
    // between the two statements), `retry` runs the operation again on the new state.
    const decide = <A, E>(
      id: Route.RouteId,
      precondition: RouteRepository.Precondition | undefined,
      settled: (route: Route.StoredRoute) => Effect.Effect<A, E | SqlError> | undefined,
      retry: () => Effect.Effect<A, E | SqlError>
    ): Effect.Effect<A, E | SqlError | RouteRepository.RouteNotFound | RouteRepository.PreconditionFailed> =>
      Effect.flatMap(readRoute(id), (
        row
      ): Effect.Effect<A, E | SqlError | RouteRepository.RouteNotFound | RouteRepository.PreconditionFailed> => {
        if (row === undefined) return notFound(id)
        const current = fromRow(row)
        if (!RouteRepository.meetsPrecondition(precondition, current.revision)) {
          return Effect.fail(new RouteRepository.PreconditionFailed({ id, revision: current.revision }))
        }
        return settled(current) ?? retry()
      })

    const isShapeConflict = (error: unknown): error is SqlError => {
      const cause = error as { _tag?: unknown; cause?: { code?: unknown; constraint?: unknown } }
      return cause._tag === "SqlError" && cause.cause?.code === "23505" && cause.cause.constraint === shapeConstraint
    }

    // The method bound's trigger (migration 6) refused the row: the whole statement is rolled back.
    const methodConstraint = `${tableName}_method_limit`
    const isMethodLimit = (error: unknown): error is SqlError => {
      const cause = error as { _tag?: unknown; cause?: { code?: unknown; constraint?: unknown } }
      return cause._tag === "SqlError" && cause.cause?.code === "23514" &&
        cause.cause.constraint === methodConstraint
    }
    const tooManyMethods = (method: string) =>
      Effect.fail(new RouteRepository.TooManyMethods({ method, limit: Limits.MAX_METHODS }))

    type CreateError = RouteRepository.RouteConflict | RouteRepository.TooManyMethods

    const create = (route: Route.Route): Effect.Effect<Route.StoredRoute, CreateError | SqlError> => {
      const shape = Route.shapeOf(route.path)
      // The unique index decides conflicts: of concurrent inserts of one shape exactly one returns a row.
      return sql<RouteRow>`
        INSERT INTO ${table} (id, method, path, path_shape, middleware, handler, created_at, revision)
        VALUES (${route.id}, ${route.method}, ${route.path}, ${shape}, ${route.middleware}, ${route.handler},
                ${route.createdAt}, ${revision})
        ON CONFLICT (method, path_shape) DO NOTHING
        RETURNING ${columns}`.pipe(
        Effect.catchIf(isMethodLimit, () => tooManyMethods(route.method)),
        Effect.flatMap((inserted) =>
          inserted.length > 0
            ? Effect.succeed(fromRow(inserted[0]!))
            : Effect.flatMap(
              sql<{ id: string }>`SELECT id FROM ${table} WHERE method = ${route.method} AND path_shape = ${shape}`,
              (holders) =>
                holders.length === 0
                  ? create(route) // the holder was deleted in between: the shape is free now
                  : Effect.fail(
                    new RouteRepository.RouteConflict({
                      method: route.method,
                      path: route.path,
                      conflictingRouteId: holders[0]!.id
                    })
                  )
            )
        )
      )
    }

    const keys = sql(settings.idempotencyKeys)

    // Refuses a new key of `size` bytes past the principal's bounds. The principal's lock (a transaction advisory lock,
    // waited for) makes the count and the write that follows it one step across processes.
    const checkHeld = (idempotency: RouteRepository.Idempotency, size: number, at: Date) =>
      Effect.gen(function*() {
        const { key, maxBytes, maxKeys, principal } = idempotency
        const lockName = JSON.stringify([settings.idempotencyKeys, principal])
        yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${lockName}, 0))`
        const [held] = yield* sql<HeldRow>`
          SELECT count(*) AS keys, COALESCE(sum(octet_length(key)), 0) AS key_bytes, min(expires_at) AS oldest
          FROM ${keys} WHERE principal = ${principal} AND expires_at > ${at}`
        const count = Number(held?.keys ?? 0)
        const bytes = Number(held?.key_bytes ?? 0) + count * Limits.IDEMPOTENCY_KEY_OVERHEAD_BYTES
        if (count < maxKeys && bytes + size <= maxBytes) return
        const oldest = held?.oldest ?? null
        const oldestMillis = oldest instanceof Date ? oldest.getTime() : oldest ?? at.getTime()
        return yield* new RouteRepository.TooManyIdempotencyKeys({
          key,
          keys: count,
          bytes,
          maxKeys,
          maxBytes,
          retryAfterMillis: Math.max(0, oldestMillis - at.getTime())
        })
      })

    // One transaction locks the key, reads it and, when it is new, checks the principal's bounds and writes the route
    // and the key's first answer together: a 201 is remembered exactly when its route is committed. The key's lock is
    // a transaction advisory lock on the table and key, taken without waiting: while a create with the key runs
    // anywhere, another fails at once.
    const createIdempotent = (
      input: Route.CreateRoute,
      idempotency: RouteRepository.Idempotency,
      now: number
    ): Effect.Effect<
      RouteRepository.Remembered,
      | RouteRepository.IdempotencyKeyReused
      | RouteRepository.IdempotencyKeyInUse
      | RouteRepository.TooManyIdempotencyKeys
      | RouteRepository.TooManyMethods
      | SqlError
    > =>
      Effect.gen(function*() {
        const { key, principal } = idempotency
        const fingerprint = Buffer.from(RouteRepository.fingerprint(input), "base64url")
        const at = new Date(now)
        const lockName = JSON.stringify([settings.idempotencyKeys, principal, key])
        const [lock] = yield* sql<{ locked: boolean }>`
          SELECT pg_try_advisory_xact_lock(hashtextextended(${lockName}, 0)) AS locked`
        if (lock?.locked !== true) return yield* new RouteRepository.IdempotencyKeyInUse({ key })
        const [kept] = yield* sql<KeyRow>`
          SELECT fingerprint = ${fingerprint} AS same, route_id, created_at, revision FROM ${keys}
          WHERE principal = ${principal} AND key = ${key} AND expires_at > ${at}`
        if (kept !== undefined) {
          if (!kept.same) return yield* new RouteRepository.IdempotencyKeyReused({ key })
          return { outcome: RouteRepository.answerAgain(input, firstAnswerOf(kept)), replayed: true }
        }
        yield* checkHeld(idempotency, RouteRepository.keySize(key), at)
        // Each keyed create forgets a batch of expired keys, skipping those another one is forgetting: expiry needs
        // no background job, and no create waits for another's.
        yield* sql`DELETE FROM ${keys} WHERE (principal, key) IN (
          SELECT principal, key FROM ${keys} WHERE expires_at <= ${at} LIMIT 100 FOR UPDATE SKIP LOCKED)`
        const outcome = yield* create(RouteRepository.makeRoute(ids, input, now)).pipe(
          Effect.map(Either.right),
          Effect.catchTag("RouteConflict", (conflict) => Effect.succeed(Either.left(conflict)))
        )
        const first = RouteRepository.firstAnswerOf(outcome)
        const lifetime = Duration.toMillis(idempotency.expiresAfter)
        // Past the last instant a Date holds, a key never expires.
        const expiresAt = now + lifetime <= MAX_DATE_MILLIS ? new Date(now + lifetime) : "infinity"
        const createdAt = first.createdAt === undefined ? null : new Date(first.createdAt)
        // The lock is ours and no live row holds the key, so a row in the way has expired: it is replaced.
        yield* sql`
          INSERT INTO ${keys} (principal, key, fingerprint, route_id, created_at, revision, expires_at)
          VALUES (${principal}, ${key}, ${fingerprint}, ${first.routeId}, ${createdAt}, ${first.revision ?? null},
                  ${expiresAt})
          ON CONFLICT (principal, key) DO UPDATE
          SET fingerprint = excluded.fingerprint, route_id = excluded.route_id, created_at = excluded.created_at,
            revision = excluded.revision, expires_at = excluded.expires_at`
        return { outcome, replayed: false }
      })

    const update = (
      id: Route.RouteId,
      patch: Route.RoutePatch,
      precondition: RouteRepository.Precondition | undefined
    ): Effect.Effect<
      Route.StoredRoute,
      | RouteRepository.RouteNotFound
      | RouteRepository.PreconditionFailed
      | RouteRepository.RouteConflict
      | RouteRepository.TooManyMethods
      | RouteRepository.StoreUnavailable
      | SqlError
    > => {
      const unchanged = (current: Route.StoredRoute) =>
        RouteRepository.patchChanges(current, patch) ? undefined : Effect.succeed(current)
      const shape = patch.path === undefined ? undefined : Route.shapeOf(patch.path)
      const given: Array<readonly [column: string, value: unknown]> = []
      if (patch.method !== undefined) given.push(["method", patch.method])
      if (patch.path !== undefined) given.push(["path", patch.path], ["path_shape", shape])
      if (patch.middleware !== undefined) given.push(["middleware", patch.middleware])
      if (patch.handler !== undefined) given.push(["handler", patch.handler])
      // One statement checks the precondition and writes only a real change; the unique index decides conflicts.
      const statement = sql<RouteRow>`
        UPDATE ${table} SET ${sql.csv(given.map(([column, value]) => sql`${sql(column)} = ${value}`))},
          revision = ${revision}
        WHERE id = ${id} ${revisionIn(precondition)}
          AND ${sql.or(given.map(([column, value]) => sql`${value} IS DISTINCT FROM ${sql(column)}`))}
        RETURNING ${columns}`
      // The route that holds the new method and shape, and that method and path, read after the unique index refused.
      const holder = sql<{ holder: string; method: string; path: string }>`${readMark}
        SELECT other.id AS holder, COALESCE(${patch.method ?? null}, self.method) AS method,
               COALESCE(${patch.path ?? null}, self.path) AS path
        FROM ${table} AS self JOIN ${table} AS other
          ON other.method = COALESCE(${patch.method ?? null}, self.method)
          AND other.path_shape = COALESCE(${shape ?? null}, self.path_shape) AND other.id <> self.id
        WHERE self.id = ${id}`
      // In one transaction: the statement and, when it changed nothing, why. A refused shape ends the transaction, so the
      // holder is read after it.
      const attempt = (): Effect.Effect<
        Route.StoredRoute,
        RouteRepository.RouteNotFound | RouteRepository.PreconditionFailed | SqlError
      > =>
        given.length === 0 ?
          decide(id, precondition, unchanged, attempt) :
          Effect.flatMap(statement, (rows) =>
            rows.length > 0 ? Effect.succeed(fromRow(rows[0]!)) : decide(id, precondition, unchanged, attempt))
      // A refusal by the method bound or the unique index ends the transaction: both are answered after it.
      return write(attempt()).pipe(
        Effect.catchIf(isMethodLimit, () => tooManyMethods(patch.method!)),
        Effect.catchIf(isShapeConflict, () =>
          Effect.flatMap(deadline.read(holder), (holders) =>
            holders.length === 0
              ? update(id, patch, precondition) // the holder moved or went away in between
              : Effect.fail(
                new RouteRepository.RouteConflict({
                  method: holders[0]!.method,
                  path: holders[0]!.path,
                  conflictingRouteId: holders[0]!.holder
                })
              )))
      )
    }

    const remove = (
      id: Route.RouteId,
      precondition: RouteRepository.Precondition | undefined
    ): Effect.Effect<
      void,
      RouteRepository.RouteNotFound | RouteRepository.PreconditionFailed | RouteRepository.StoreUnavailable | SqlError
    > => {
      const attempt = (): Effect.Effect<
        void,
        RouteRepository.RouteNotFound | RouteRepository.PreconditionFailed | SqlError
      > =>
        Effect.flatMap(
          // A delete is a change too: it takes a revision, which a change feed can carry.
          sql`DELETE FROM ${table} WHERE id = ${id} ${revisionIn(precondition)} RETURNING ${revision}`,
          (deleted) => deleted.length > 0 ? Effect.void : decide(id, precondition, () => undefined, attempt)
        )
      return write(attempt())
    }

    const list = (query: RouteRepository.ListQuery) => {
      const { after, handler, method, middleware, pathPrefix } = query
      const conditions = [
        after === undefined
          ? undefined
          : CANONICAL_UUID.test(after)
          ? sql`id > ${after}`
          // Any other string is compared as text, in byte order; ids hold no NUL, so the part before one orders
          // them the same way.
          : sql`id::text COLLATE "C" > ${after.split("\u0000")[0]}`,
        method === undefined ? undefined : sql`method = ${method}`,
        handler === undefined ? undefined : sql`handler = ${handler}`,
        middleware === undefined ? undefined : sql`middleware @> ARRAY[${middleware}]::text[]`,
        pathPrefix === undefined ? undefined : sql`starts_with(path, ${pathPrefix})`
      ].filter((condition) => condition !== undefined)
      // One more row than the page says whether another follows.
      return Effect.map(
        sql<RouteRow>`${readMark}
          SELECT ${columns} FROM ${table} WHERE ${sql.and(conditions)} ORDER BY id LIMIT ${query.limit + 1}`,
        (rows): RouteRepository.Page => ({
          items: rows.slice(0, query.limit).map(fromRow),
          hasMore: rows.length > query.limit
        })
      )
    }

    // Creates and reads made at the same moment outside a host's transaction share one statement each (a batch per
    // turn of the event loop), so concurrent clients share round trips and commits. In a batch of creates the unique
    // index still decides: of two rows of one method and shape the first is inserted, and every row it skipped takes
    // the single-route path, which names the holder or, if the holder went away, inserts. A row refused by the
    // method bound fails the whole statement: then each route takes the single-route path, and only that one is
    // refused. Rows of methods not stored yet go first, so a batch waits for the bound's lock before it holds rows
    // another writer could wait for (each waiting for the other would deadlock).
    const createBatch = Batch.make((routes: ReadonlyArray<Route.Route>) =>
      write(Effect.flatMap(
        sql<RouteRow>`
          WITH input AS (
            SELECT * FROM json_to_recordset(${JSON.stringify(routes.map(batchRow))}::json) AS x(
              ord int, id uuid, method text, path text, path_shape text, middleware text[], handler text,
              created_at timestamptz
            )
          )
          INSERT INTO ${table} (id, method, path, path_shape, middleware, handler, created_at, revision)
          SELECT id, method, path, path_shape, middleware, handler, created_at, ${revision} FROM input
          ORDER BY EXISTS (SELECT 1 FROM ${table} AS stored WHERE stored.method = input.method), ord
          ON CONFLICT (method, path_shape) DO NOTHING
          RETURNING ${columns}`,
        (inserted) => {
          const stored = new Map(inserted.map((row) => [row.id, fromRow(row)]))
          // A conflict fails its own create; any other failure has ended the transaction, and fails the batch.
          return Effect.forEach(routes, (route) => {
            const created = stored.get(route.id)
            if (created !== undefined) return Effect.succeed(Exit.succeed(created))
            return create(route).pipe(
              Effect.map((alone): Exit.Exit<Route.StoredRoute, CreateError> => Exit.succeed(alone)),
              Effect.catchTag("RouteConflict", (conflict) => Effect.succeed(Exit.fail(conflict)))
            )
          }, { concurrency: "unbounded" })
        }
      )).pipe(
        // The method bound refused a row: the whole statement and its transaction are undone. Each route then takes a
        // transaction of its own, and only the ones past the bound are refused.
        Effect.catchIf(
          isMethodLimit,
          () => Effect.forEach(routes, (route) => Effect.exit(write(create(route))), { concurrency: "unbounded" })
        )
      )
    )

    const findBatch = Batch.make((wanted: ReadonlyArray<Route.RouteId>) =>
      Effect.map(
        sql<RouteRow>`${readMark}SELECT ${columns} FROM ${table} WHERE id = ANY(${wanted}::uuid[])`,
        (rows) => {
          const found = new Map(rows.map((row) => [row.id, fromRow(row)]))
          return wanted.map((id) => {
            const route = found.get(id)
            return route === undefined ? Exit.fail(new RouteRepository.RouteNotFound({ id })) : Exit.succeed(route)
          })
        }
      )
    )

    // Inside a host's transaction a statement must run on its connection: no batch.
    const unlessInTransaction = <A, E>(batched: Effect.Effect<A, E>, alone: Effect.Effect<A, E>) =>
      Effect.flatMap(
        Effect.serviceOption(SqlClient.TransactionConnection),
        (transaction) => transaction._tag === "Some" ? alone : batched
      )

    const feed = ChangeFeed.make({ pg, sql, settings, columns, fromJson, guard, readMark })
    // Every change is announced once committed, so the other processes' tables have it at once.
    const announced = <E, R>(effect: Effect.Effect<Route.StoredRoute, E, R>) =>
      Effect.tap(effect, (route) => feed.announce({ upserted: route }))

    return RouteRepository.RouteRepository.of({
      create: (input) =>
        announced(
          storeErrors(Effect.flatMap(Clock.currentTimeMillis, (now) => {
            const route = RouteRepository.makeRoute(ids, input, now)
            return unlessInTransaction(createBatch(route), write(create(route)))
          }))
        ),
      findById: (id) =>
        withRouteId(
          id,
          (routeId) =>
            deadline.read(unlessInTransaction(
              findBatch(routeId),
              Effect.flatMap(
                readRoute(routeId),
                (row) => row === undefined ? notFound(id) : Effect.succeed(fromRow(row))
              )
            ))
        ),
      list: (query) =>
        [query.method, query.handler, query.middleware, query.pathPrefix].some(holdsNul)
          ? Effect.succeed(EMPTY_PAGE)
          : guard(list(query)),
      update: (id, patch, precondition) =>
        announced(withRouteId(id, (routeId) => update(routeId, patch, precondition))),
      // Removals are what the feed keeps history of, so the process that removes prunes it.
      remove: (id, precondition) =>
        Effect.tap(
          withRouteId(id, (routeId) => remove(routeId, precondition)),
          () => Effect.zipRight(feed.announce({ removed: id }), feed.prune)
        ),
      changes: feed.changes,
      // Announced only when this call created a route.
      createIdempotent: (input, idempotency) =>
        Effect.tap(
          storeErrors(
            Effect.flatMap(Clock.currentTimeMillis, (now) => write(createIdempotent(input, idempotency, now)))
          ),
          ({ outcome, replayed }) =>
            replayed || Either.isLeft(outcome) ? Effect.void : feed.announce({ upserted: outcome.right })
        )
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
