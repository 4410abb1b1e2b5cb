/**
 * The request core of the routing API, free of any HTTP framework. It takes a minimal view of a request and
 * yields a response, implementing every rule of the contract's HTTP interface once; the adapters (`AdminListener`,
 * `AdminWebHandler`, `AdminHttpApp`) only translate to and from their transport.
 *
 * Each operation below reads top to bottom in the contract's order of checks: authentication and scope, then the
 * body or the query, then the store: one `Effect.gen` each, run by the adapter that asked.
 *
 * @since 0.1.0
 */
import type { Context } from "effect"
import { Duration, Effect, Either, Option, Runtime } from "effect"
import * as Authenticator from "./Authenticator.js"
import * as Catalog from "./Catalog.js"
import * as HostPaths from "./HostPaths.js"
import * as Principals from "./internal/auth/principals.js"
import * as Answers from "./internal/http/answers.js"
import * as BoundStore from "./internal/http/boundStore.js"
import * as ChangeStream from "./internal/http/changeStream.js"
import * as Content from "./internal/http/content.js"
import * as Dashboard from "./internal/http/dashboard.js"
import * as Dispatch from "./internal/http/dispatch.js"
import * as Endpoints from "./internal/http/endpoints.js"
import type * as Exchange from "./internal/http/exchange.js"
import { COLLECTION as COLLECTION_PATH } from "./internal/http/exchange.js"
import * as Operations from "./internal/http/operations.js"
import * as ServiceErrors from "./internal/http/serviceErrors.js"
import type * as Steps from "./internal/http/steps.js"
import * as RequestTelemetry from "./internal/http/telemetry.js"
import * as Limits from "./internal/limits.js"
import * as Options_ from "./internal/options.js"
import type { InvalidOption } from "./InvalidOption.js"
import type * as Route from "./Route.js"
import * as RouteRepository from "./RouteRepository.js"
import * as RouteTable from "./RouteTable.js"
import * as Telemetry from "./Telemetry.js"

/**
 * Why a body could not be read in full: `"TooLarge"` (more bytes arrived than the limit allows), `"Incomplete"` (the
 * client stopped sending before the body was complete), `"Timeout"` (the whole body did not arrive within the time
 * allowed) or `"Consumed"` (something else read the body first, a body parser mounted before the API: the host is
 * misconfigured).
 *
 * @since 0.1.0
 */
export type BodyFailure = Exchange.BodyFailure

/**
 * What the core needs of a request: its method, its path (without the query string, as received), its query string
 * (without the `?`), the path the API is mounted under (`base`), its headers by lowercase name (several lines of one
 * header joined by ", ") and a reader of its body under the limits the core gives.
 *
 * @since 0.1.0
 */
export type Request = Exchange.Request

/**
 * What the core answers. `headers` holds lowercase names; `body` is JSON text (empty for none: 204 and 304); a problem
 * document carries its code in `problem` too. The change stream's answer has a `stream` instead of a body: the adapter
 * writes the head, then opens the stream on its connection (`OpenBody`).
 *
 * @since 0.1.0
 */
export type Response = Exchange.Response

/**
 * The body of an answer that stays open: the adapter calls `open` once with its connection, and the function it
 * returns once the connection is gone.
 *
 * @since 0.4.0
 */
export type OpenBody = Exchange.OpenBody

/**
 * The connection an open answer writes into, as an adapter gives it: `write` queues text, `buffered` says how many
 * bytes are queued and not yet sent, `drained` calls back once they are sent, `close` closes the connection at once.
 *
 * @since 0.4.0
 */
export type Sink = Exchange.Sink

/**
 * Each option is a whole number from 1 (`idempotencyKeyBytesPerPrincipal`: 511) to `Number.MAX_SAFE_INTEGER`; any
 * other value fails `make` with `InvalidOption` naming it.
 *
 * @since 0.1.0
 */
export interface Options {
  /** Largest accepted request body in bytes. Default 65,536 (64 KiB). */
  readonly maxBodyBytes?: number | undefined
  /**
   * Largest accepted body of a change set (`POST /v1/routing/batch`) in bytes. Default 4,194,304 (4 MiB).
   *
   * @since 0.5.0
   */
  readonly maxBatchBodyBytes?: number | undefined
  /**
   * Longest time a body may take to arrive in full, in milliseconds; a slower client is answered 408 and its
   * connection closed. Default 10,000. No store connection is held while a body is read.
   */
  readonly bodyTimeoutMillis?: number | undefined
  /** Seconds a client is told to wait (`Retry-After`) when the store is unavailable. Default 1. */
  readonly retryAfterSeconds?: number | undefined
  /**
   * Seconds a create's `Idempotency-Key` is remembered, counted from its first answer: a retry with the key within
   * this time gets that answer again; after it the key is new. Default 86,400 (24 hours).
   */
  readonly idempotencyKeyExpirySeconds?: number | undefined
  /**
   * The most idempotency keys one principal (one client) may hold at once, expired keys not counted. A create with a
   * new key past it is answered `429 too_many_idempotency_keys` with `Retry-After` (until its oldest key expires), and
   * nothing is written. Default 10,000. The store enforces it atomically, across processes on Postgres.
   */
  readonly idempotencyKeysPerPrincipal?: number | undefined
  /**
   * The most bytes one principal's idempotency keys may count at once, each its length in UTF-8 plus 256 bytes for
   * what is kept with it; past it, as past `idempotencyKeysPerPrincipal`. Default 4,194,304 (4 MiB); at least 511,
   * so that a client holding no key can always send one of the longest (255 characters).
   */
  readonly idempotencyKeyBytesPerPrincipal?: number | undefined
  /**
   * How often each open change stream (`GET /v1/routing/changes`) is sent a heartbeat, a `:` comment line that keeps
   * idle connections and the proxies on their way from closing them, and says whether this process's table is current
   * (docs/http-api.md, "Following every change"), in milliseconds, at most 15,000 (followers rely on one at least
   * every 15 s). Default 10,000.
   */
  readonly changesHeartbeatMillis?: number | undefined
  /**
   * The most bytes a change stream's connection may hold written but not yet sent (a follower that reads slower than
   * changes come, or stopped reading) before it is closed; the follower then resumes from its last cursor, or starts
   * again from a snapshot. It bounds what a follower can make the registry hold. Default 1,048,576 (1 MiB).
   */
  readonly changesBufferBytes?: number | undefined
  /**
   * The most change streams one principal (one token's subject) may hold open at once; one more is answered
   * `429 too_many_streams` with `Retry-After`. A fleet usually follows with one token, so keep it above the fleet's
   * size. Default 2,000.
   */
  readonly changesStreamsPerPrincipal?: number | undefined
  /**
   * How long a change stream that is catching up (sending a snapshot, or the changes after its cursor) or held (its
   * cursor is ahead of this process) may go without its connection taking what it was sent, before it is closed, in
   * milliseconds; the follower then resumes from its last cursor. It bounds how long a client that stopped reading
   * holds the registry's memory. Default 30,000.
   */
  readonly changesStallMillis?: number | undefined
  /**
   * Serve the dashboard (a web page for the people who run the registry) at `/v1/routing/ui/`, below the mount like
   * the rest of the API. The page and its assets carry no data and need no token; the page signs in with a token the
   * person enters and reads everything through the API. Default `false`. The package ships the page built; turned on
   * where it was not built (a clone without `npm run build`), `make` fails with `InvalidOption` naming `dashboard`.
   */
  readonly dashboard?: boolean | undefined
}

/**
 * @since 0.1.0
 */
export const DEFAULT_MAX_BODY_BYTES: number = Limits.DEFAULT_MAX_BODY_BYTES

/**
 * @since 0.1.0
 */
export const DEFAULT_BODY_TIMEOUT_MILLIS: number = Limits.DEFAULT_BODY_TIMEOUT_MILLIS

/**
 * Routes in one page of a listing when the query gives no `limit`.
 *
 * @since 0.2.0
 */
export const DEFAULT_PAGE_SIZE: number = Limits.DEFAULT_PAGE_SIZE

/**
 * Most routes in one page of a listing (the largest `limit`).
 *
 * @since 0.2.0
 */
export const MAX_PAGE_SIZE: number = Limits.MAX_PAGE_SIZE

/**
 * How often an open change stream is sent a heartbeat when `changesHeartbeatMillis` is not given.
 *
 * @since 0.4.0
 */
export const DEFAULT_CHANGES_HEARTBEAT_MILLIS: number = Limits.DEFAULT_CHANGES_HEARTBEAT_MILLIS

/**
 * The most bytes a change stream's connection may hold unsent when `changesBufferBytes` is not given (1 MiB).
 *
 * @since 0.4.0
 */
export const DEFAULT_CHANGES_BUFFER_BYTES: number = Limits.DEFAULT_CHANGES_BUFFER_BYTES

/**
 * The path of the change stream (Server-Sent Events of every change of the process's table).
 *
 * @since 0.4.0
 */
export const CHANGES: string = Endpoints.CHANGES

/**
 * The `Allow` header of a 405 on the change stream's path.
 *
 * @since 0.4.0
 */
export const CHANGES_ALLOW: string = Endpoints.allowOf(Endpoints.CHANGES)

/**
 * The collection path; a route lives at `${COLLECTION}/{id}`.
 *
 * @since 0.1.0
 */
export const COLLECTION: typeof COLLECTION_PATH = COLLECTION_PATH

/**
 * The `Allow` header of a 405 on the collection: the methods it serves.
 *
 * @since 0.2.0
 */
export const COLLECTION_ALLOW: string = Endpoints.allowOf(COLLECTION_PATH)

/**
 * The `Allow` header of a 405 on one route: the methods it serves.
 *
 * @since 0.2.0
 */
export const ROUTE_ALLOW: string = Endpoints.allowOf(Endpoints.ITEM)

/**
 * Where the dashboard is served when the `dashboard` option is on: the page at `${DASHBOARD}/`, its assets below it.
 *
 * @since 0.4.0
 */
export const DASHBOARD: string = Dashboard.UI

/**
 * What the core needs from its host: a store and an authenticator.
 *
 * @since 0.1.0
 */
export type Services = RouteRepository.RouteRepository | Authenticator.Authenticator

/**
 * The core bound to its services. `handle` returns `undefined`, synchronously, for a path outside `/v1/routing`,
 * so the adapter can hand the request back to the host; else the answer as an Effect that nothing has started: the
 * adapter runs it (the library's own on a fiber resumed at once, so that an answer waiting for nothing is complete
 * when the run returns), inside its own span if it has one, which the request's span is then a child of. `handle`
 * never throws and its Effect never fails: whatever a service does is answered.
 *
 * @since 0.1.0
 */
export interface RoutingHandler {
  readonly handle: (request: Request) => Effect.Effect<Response> | undefined
  /**
   * Closes every change stream open now (their followers resume from their cursors, here or elsewhere): for a host
   * shutting down, whose server waits for open connections before it closes.
   */
  readonly closeStreams: () => void
}

/**
 * The `Location` of a stored route, built from its id alone.
 *
 * @since 0.1.0
 */
export const location: (id: Route.RouteId) => string = Operations.location

/**
 * The answer to anything unexpected: no cause, stack or SQL in it (the cause goes to the log).
 *
 * @since 0.1.0
 */
export const internalError: Response = Answers.INTERNAL_ERROR

/**
 * What an adapter with no host to fall back on answers for a path outside `/v1/routing`.
 *
 * @since 0.1.0
 */
export const notFound: Response = Answers.NOT_FOUND

/** What the change stream reads: the process's table, its replay ring, and its status (for the heartbeats). */
interface Changes {
  readonly table: RouteTable.Table<Route.StoredRoute>
  readonly ring: Context.Tag.Service<RouteTable.ReplayRing>
  readonly status: (() => RouteTable.Status) | undefined
}

const makeCore = (
  runtime: Runtime.Runtime<never>,
  { offered, repository }: BoundStore.BoundStore,
  authenticator: Context.Tag.Service<Authenticator.Authenticator>,
  config: Options_.Config,
  catalog: Catalog.Names | undefined,
  hostPaths: HostPaths.Paths,
  changes: Changes | undefined,
  instrument?: Endpoints.Instrument
): RoutingHandler => {
  const core: Steps.Core = {
    repository,
    memoryRead: offered.memoryRead,
    idempotent: offered.idempotent,
    changeLog: offered.changeLog,
    restorable: offered.restorable,
    batches: offered.batches,
    readOnly: offered.readOnly,
    authenticator: Principals.guarded(authenticator, Principals.refusalLog()),
    limits: Content.bodyLimits(config.maxBodyBytes, config.bodyTimeoutMillis),
    batchLimits: Content.bodyLimits(config.maxBatchBodyBytes, config.bodyTimeoutMillis),
    failures: ServiceErrors.cases(Answers.unavailable(config.retryAfterSeconds)),
    catalog,
    hostPaths,
    keyExpiry: Duration.seconds(config.idempotencyKeyExpirySeconds),
    maxKeys: config.idempotencyKeysPerPrincipal,
    maxKeyBytes: config.idempotencyKeyBytesPerPrincipal,
    keysInFlight: new Set(),
    answers: offered.memoryRead === undefined ? undefined : new Map(),
    instrument,
    dashboard: config.dashboard,
    changes: changes === undefined ? undefined : {
      table: changes.table,
      ring: changes.ring,
      log: BoundStore.readLog(runtime, offered.changeLog),
      bufferBytes: config.changesBufferBytes,
      stallMillis: config.changesStallMillis,
      streamsPerPrincipal: config.changesStreamsPerPrincipal,
      principals: new Map(),
      logReads: ChangeStream.logReads(),
      heartbeats: ChangeStream.heartbeats(runtime, config.changesHeartbeatMillis, changes.status),
      shared: undefined
    }
  }
  const changesSource = core.changes
  return {
    handle: (request) => Dispatch.handle(core, request),
    closeStreams: () => {
      if (changesSource !== undefined) ChangeStream.closeAll(changesSource)
    }
  }
}

// The table and its replay ring when both are in context (`RouteTable.layer` provides them): the change stream's source.
const changesInContext: Effect.Effect<Changes | undefined> = Effect.map(
  Effect.all([
    Effect.serviceOption(RouteTable.RouteTable),
    Effect.serviceOption(RouteTable.ReplayRing),
    Effect.serviceOption(RouteTable.TableStatus)
  ]),
  ([table, ring, status]) =>
    Option.isSome(table) && Option.isSome(ring)
      ? { table: table.value, ring: ring.value, status: Option.getOrUndefined(status)?.unsafeGet }
      : undefined
)

/**
 * Binds the core to the `RouteRepository` and `Authenticator` in context, to the `Catalog` when the host
 * declared one, and to the `HostPaths` the host serves itself (a route may not take them; `match` answers them as the
 * host's); fails with `InvalidOption` naming the first option out of its range. With `Telemetry.layer` in
 * context, the core and its store are instrumented; without it, they are left as they are. With the route table's
 * `RouteTable.RouteTable` and `RouteTable.ReplayRing` in context (`RouteTable.layer`), it serves the change stream
 * `GET /v1/routing/changes`; without them, that path is answered `404 not_found`, saying why.
 *
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<RoutingHandler, InvalidOption, Services> =>
  Either.match(Options_.resolve(options), {
    onLeft: Effect.fail,
    onRight: (config) =>
      Effect.map(
        Effect.all([
          BoundStore.inContext,
          Authenticator.Authenticator,
          Catalog.Catalog,
          HostPaths.HostPaths,
          Telemetry.Telemetry,
          changesInContext,
          Effect.runtime<never>()
        ]),
        ([store, authenticator, catalog, hostPaths, telemetry, changes, runtime]) =>
          telemetry === undefined
            ? makeCore(runtime, store, authenticator, config, catalog, hostPaths, changes)
            : makeCore(
              runtime,
              BoundStore.instrumented(store),
              authenticator,
              config,
              catalog,
              hostPaths,
              changes,
              RequestTelemetry.request
            )
      )
  })

/**
 * The core over explicit services (what `make` does with the ones in context). Throws `InvalidOption` naming the
 * first option out of its range.
 *
 * `store` is the store alone, which offers nothing beyond the contract, or (0.5.0) a context holding it and what it
 * offers beside it, as its layer provides them: `PgRouteRepository.makeContext`'s, `RouteRepository.makeMemoryContext`'s
 * or a context of the host's own. The core then answers as over the layer: creates with an `Idempotency-Key`, the
 * change log, restores and change sets, each route's 200 kept per revision (`MemoryRead`), and writes on a read-only
 * store answered `405` before authentication (`ReadOnly`). docs/mounting.md, "Explicit services".
 *
 * @since 0.1.0
 */
export const makeWith = (
  store: Context.Tag.Service<RouteRepository.RouteRepository> | Context.Context<RouteRepository.RouteRepository>,
  authenticator: Context.Tag.Service<Authenticator.Authenticator>,
  options: Options = {},
  catalog?: Catalog.Names
): RoutingHandler =>
  Either.match(Options_.resolve(options), {
    onLeft: (invalid) => {
      throw invalid
    },
    onRight: (config) =>
      makeCore(
        Runtime.defaultRuntime,
        BoundStore.given(store),
        authenticator,
        config,
        catalog,
        HostPaths.none,
        undefined
      )
  })

/**
 * Checks `options` as `make` does, for an adapter that wants to refuse them before building anything.
 *
 * @since 0.2.0
 */
export const checkOptions = (options: Options): InvalidOption | undefined => {
  const resolved = Options_.resolve(options)
  return Either.isLeft(resolved) ? resolved.left : undefined
}
