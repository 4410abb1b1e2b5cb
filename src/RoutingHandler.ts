/**
 * The request core of the routing API, free of any HTTP framework. It takes a minimal view of a request and
 * yields a response, implementing every rule of the contract's HTTP interface once; the adapters (`NodeListener`,
 * `WebHandler`, `RoutingHttpApp`) only translate to and from their transport.
 *
 * Each operation below reads top to bottom in the contract's order of checks: authentication and scope, then the
 * body or the query, then the store. Its steps are completed Effects (`Exit`s) whenever the services answer at once,
 * and are then folded without a fiber.
 *
 * @since 0.1.0
 */
import type { Context } from "effect"
import { Duration, Effect, Either, Exit, pipe, Redacted } from "effect"
import * as Authenticator from "./Authenticator.js"
import * as Catalog from "./Catalog.js"
import * as Answers from "./internal/http/answers.js"
import * as Conditional from "./internal/http/conditional.js"
import * as Content from "./internal/http/content.js"
import * as Credentials from "./internal/http/credentials.js"
import { answer, type Refusal, refuse } from "./internal/http/fold.js"
import * as Idempotency from "./internal/http/idempotency.js"
import * as ListQuery from "./internal/http/listQuery.js"
import * as Limits from "./internal/limits.js"
import { call, flatMapNow } from "./internal/now.js"
import * as Options_ from "./internal/options.js"
import type { InvalidOption } from "./InvalidOption.js"
import * as Route from "./Route.js"
import * as RouteRepository from "./RouteRepository.js"
import * as Telemetry from "./Telemetry.js"

/**
 * Why a body could not be read in full.
 *
 * @since 0.1.0
 */
export type BodyFailure =
  /** More bytes arrived than the limit allows. */
  | "TooLarge"
  /** The client stopped sending before the body was complete. */
  | "Incomplete"
  /** The whole body did not arrive within the time allowed. */
  | "Timeout"
  /** Something else read the body first (a body parser mounted before the API): the host is misconfigured. */
  | "Consumed"

/**
 * What the core needs of a request.
 *
 * @since 0.1.0
 */
export interface Request {
  readonly method: string
  /** The path without the query string, as received (not decoded). */
  readonly path: string
  /** The query string, without the `?`, as received (empty when there is none). */
  readonly query: string
  /**
   * The path the API is mounted under (`"/admin"` for Express's `app.use("/admin", …)`), without a trailing slash;
   * `undefined` or `""` at the origin's root. `Location` and `Link` carry it, so they name what a client requests.
   */
  readonly base?: string | undefined
  /**
   * A header's value by lowercase name; `undefined` when absent. Several lines of one header come joined by ", ",
   * as the web `Headers` joins them (so two `Authorization` headers are seen, and refused).
   */
  readonly header: (name: string) => string | undefined
  /**
   * Reads the whole body, failing with `"TooLarge"` as soon as more than `maxBytes` have arrived, and with
   * `"Timeout"` if it is not complete within `timeoutMillis`.
   */
  readonly body: (maxBytes: number, timeoutMillis: number) => Effect.Effect<Uint8Array, BodyFailure>
}

/**
 * What the core answers. `headers` holds lowercase names; `body` is JSON text (empty for none: 204 and 304).
 *
 * @since 0.1.0
 */
export interface Response {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

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
 * The collection path; a route lives at `${COLLECTION}/{id}`.
 *
 * @since 0.1.0
 */
export const COLLECTION = "/v1/routing"

const ITEM_PREFIX = COLLECTION + "/"

/**
 * The `Allow` header of a 405 on the collection: the methods it serves.
 *
 * @since 0.2.0
 */
export const COLLECTION_ALLOW: string = Answers.COLLECTION_METHODS

/**
 * The `Allow` header of a 405 on one route: the methods it serves.
 *
 * @since 0.2.0
 */
export const ROUTE_ALLOW: string = Answers.ROUTE_METHODS

/**
 * What the core needs from its host: a store and an authenticator.
 *
 * @since 0.1.0
 */
export type Services = RouteRepository.RouteRepository | Authenticator.Authenticator

/**
 * The core bound to its services. `handle` returns `undefined`, synchronously, for a path outside `/v1/routing`,
 * so the adapter can hand the request back to the host. When the answer was decided without waiting (the services
 * answered at once) the Effect is already completed, an `Exit`, and an adapter may take its value without running a
 * fiber. `handle` never throws and its Effect never fails: whatever a service does is answered.
 *
 * @since 0.1.0
 */
export interface RoutingHandler {
  readonly handle: (request: Request) => Effect.Effect<Response> | undefined
}

/**
 * The `Location` of a stored route, built from its id alone.
 *
 * @since 0.1.0
 */
export const location = (id: Route.RouteId): string => ITEM_PREFIX + id

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

// ---------------------------------------------------------------------------------------------------------------
// The steps the operations are made of
// ---------------------------------------------------------------------------------------------------------------

interface Core {
  readonly repository: Context.Tag.Service<RouteRepository.RouteRepository>
  readonly authenticator: Context.Tag.Service<Authenticator.Authenticator>
  readonly limits: Content.BodyLimits
  readonly unavailable: Response
  /** The host's function names, when it declared them (catalog checking, CONTRACT §11). */
  readonly catalog: Catalog.Names | undefined
  /** How long a store remembers an idempotency key. */
  readonly keyExpiry: Duration.Duration
  /** How many keys, and how many bytes of them, one principal may hold at once. */
  readonly maxKeys: number
  readonly maxKeyBytes: number
  /** The idempotency keys (under their principals) of the creates this core is running. */
  readonly keysInFlight: Set<string>
  /**
   * Routes' 200s by id, each built once per revision (for the route object it was built for), when the store keeps
   * its routes in memory (it offers `unsafeFindById` and hands out one object per revision), as a hand-written server
   * keeps them; for `KEPT_ANSWERS` ids at most.
   */
  readonly answers: Map<string, KeptAnswer> | undefined
}

// What the services fail with, as declared.
type ServiceError =
  | Authenticator.InvalidToken
  | RouteRepository.RouteNotFound
  | RouteRepository.RouteConflict
  | RouteRepository.PreconditionFailed
  | RouteRepository.StoreUnavailable
  | RouteRepository.IdempotencyKeyReused
  | RouteRepository.IdempotencyKeyInUse
  | RouteRepository.TooManyIdempotencyKeys
  | RouteRepository.TooManyMethods

// The answer to a declared error of a service; `undefined` for anything else, which is answered as a defect.
const serviceErrorAnswer = (core: Core, id: string) => (error: ServiceError): Effect.Effect<Response> | undefined => {
  switch ((error as { _tag?: unknown } | null)?._tag) {
    case "InvalidToken":
      // The reason is the authenticator's, never the token.
      return Effect.as(
        Effect.logDebug("route-registry: token refused", (error as Authenticator.InvalidToken).reason),
        Answers.INVALID_TOKEN
      )
    case "RouteNotFound":
      return Exit.succeed(Answers.routeNotFound(id))
    case "PreconditionFailed":
      return Exit.succeed(Answers.preconditionFailed(id))
    case "RouteConflict": {
      const conflict = error as RouteRepository.RouteConflict
      return Exit.succeed(Answers.conflict(conflict.method, conflict.path, conflict.conflictingRouteId))
    }
    case "StoreUnavailable":
      return Exit.succeed(core.unavailable)
    case "IdempotencyKeyReused":
      return Exit.succeed(Idempotency.keyReused((error as RouteRepository.IdempotencyKeyReused).key))
    case "IdempotencyKeyInUse":
      return Exit.succeed(Idempotency.keyInUse((error as RouteRepository.IdempotencyKeyInUse).key))
    case "TooManyIdempotencyKeys":
      return Exit.succeed(Answers.tooManyIdempotencyKeys(error as RouteRepository.TooManyIdempotencyKeys))
    case "TooManyMethods": {
      const refused = error as RouteRepository.TooManyMethods
      return Exit.succeed(Answers.tooManyMethods(refused.method, refused.limit))
    }
  }
  return undefined
}

const run = (core: Core, steps: Effect.Effect<Response, ServiceError | Refusal>, id = ""): Effect.Effect<Response> =>
  answer(steps, serviceErrorAnswer(core, id), Answers.INTERNAL_ERROR)

// Authentication and scope come first, before anything is read: an unauthenticated caller learns nothing more.
const authorize = (
  core: Core,
  request: Request,
  scope: Authenticator.Scope,
  refusal: Response
): Effect.Effect<Authenticator.Principal, Refusal | Authenticator.InvalidToken> => {
  const token = Credentials.credential(request.header("authorization"))
  if (!Redacted.isRedacted(token)) return refuse(token)
  return flatMapNow(
    call(() => core.authenticator.authenticate(token)),
    (principal) => principal.scopes.includes(scope) ? Exit.succeed(principal) : refuse(refusal)
  )
}

const validated = <A>(
  result: Either.Either<A, ReadonlyArray<Route.FieldIssue>>,
  refusal: (errors: ReadonlyArray<Route.FieldIssue>) => Response
): Effect.Effect<A, Refusal> => Either.isRight(result) ? Exit.succeed(result.right) : refuse(refusal(result.left))

// With catalog checking on, a route naming a function this process has not registered is refused (CONTRACT §11).
const cataloged = <A extends Parameters<typeof Catalog.check>[1]>(core: Core, input: A): Effect.Effect<A, Refusal> => {
  if (core.catalog === undefined) return Exit.succeed(input)
  const issues = Catalog.check(core.catalog, input)
  return issues.length === 0 ? Exit.succeed(input) : refuse(Answers.invalidRoute(issues))
}

// A store that can answer from memory at once is read at once; any other store through its Effect.
const find = (core: Core, id: string): Effect.Effect<Route.StoredRoute, ServiceError> => {
  const unsafeFindById = core.repository.unsafeFindById
  if (unsafeFindById === undefined) return call(() => core.repository.findById(id))
  let route: Route.StoredRoute | undefined
  try {
    route = unsafeFindById(id)
  } catch (error) {
    return Exit.die(error)
  }
  return route === undefined ? Exit.fail(new RouteRepository.RouteNotFound({ id }, true)) : Exit.succeed(route)
}

// How many routes' 200s are kept. Keeping every route's made a store of 200,000 routes answer at 0.63x of one of
// 1,000 (bench/, the scale scenario), and evicting the oldest at 0.40x: under reads spread over many routes, building
// and dropping answers costs more than it saves. So the first ids answered are kept, and no more.
const KEPT_ANSWERS = 10_000

interface KeptAnswer {
  readonly route: Route.StoredRoute
  readonly answer: Answers.Reused
}

// A route's answer with its ETag. The Location and ETag headers are built from the id and revision alone: a route of
// any other form (a faulty store) is a defect, never a header. A 200 is kept per revision when the store keeps its
// routes in memory; another answer reuses a kept 200's body.
const withRoute = (
  core: Core,
  status: number,
  route: Route.StoredRoute,
  headers?: Record<string, string>
): Effect.Effect<Response> => {
  const entry = core.answers?.get(route.id)
  const kept = entry?.route === route ? entry.answer : undefined
  if (kept !== undefined) {
    return Exit.succeed(
      status === 200 && headers === undefined ? kept : Answers.json(status, kept.body, { ...kept.headers, ...headers })
    )
  }
  if (!(Route.isRouteId(route.id) && Number.isSafeInteger(route.revision))) {
    return Effect.dieMessage(
      `the store returned a malformed route: id ${JSON.stringify(route.id)}, revision ${String(route.revision)}`
    )
  }
  const body = Route.toJson(route)
  const etag = Conditional.etagOf(route.revision)
  // A new revision replaces its route's entry; past KEPT_ANSWERS ids, other routes are answered without keeping.
  if (status !== 200 || core.answers === undefined || (entry === undefined && core.answers.size >= KEPT_ANSWERS)) {
    return Exit.succeed(Answers.json(status, body, { etag, ...headers }))
  }
  const answer = new Answers.Reused(200, { "content-type": Answers.JSON_TYPE, etag }, body)
  core.answers.set(route.id, { route, answer })
  return Exit.succeed(answer)
}

const page = (query: RouteRepository.ListQuery, result: RouteRepository.Page, base: string): Response => {
  const last = result.items[result.items.length - 1]
  const next = result.hasMore && last !== undefined ? last.id : undefined
  const items = result.items.map(Route.toJson).join(",")
  return Answers.json(
    200,
    `{"items":[${items}],"nextCursor":${next === undefined ? "null" : `"${ListQuery.encodeCursor(next)}"`}}`,
    next === undefined ? undefined : { link: ListQuery.nextLink(base + COLLECTION, query, next) }
  )
}

// ---------------------------------------------------------------------------------------------------------------
// The operations
// ---------------------------------------------------------------------------------------------------------------

const created = (core: Core, route: Route.StoredRoute, base: string): Effect.Effect<Response> =>
  withRoute(core, 201, route, { location: base + location(route.id) })

// With an Idempotency-Key, on a store that remembers keys: created at most once per key and principal, and the first
// answer (201 or 409 route_conflict) given again. A store that remembers no keys creates as if the header was absent.
const createOnce = (
  core: Core,
  input: Route.CreateRoute,
  requestKey: Idempotency.RequestKey | undefined,
  base: string
): Effect.Effect<Response, ServiceError> => {
  const createIdempotent = core.repository.createIdempotent
  if (requestKey === undefined || createIdempotent === undefined) {
    return flatMapNow(call(() => core.repository.create(input)), (route) => created(core, route, base))
  }
  const idempotency: RouteRepository.Idempotency = {
    key: requestKey.key,
    principal: requestKey.principal,
    expiresAfter: core.keyExpiry,
    maxKeys: core.maxKeys,
    maxBytes: core.maxKeyBytes
  }
  return flatMapNow(
    Idempotency.exclusive(core.keysInFlight, requestKey, () => createIdempotent(input, idempotency)),
    ({ outcome, replayed }) =>
      flatMapNow(
        Either.match(outcome, {
          onLeft: ({ conflictingRouteId, method, path }) =>
            Exit.succeed(Answers.conflict(method, path, conflictingRouteId)),
          onRight: (route) => created(core, route, base)
        }),
        (response) => Exit.succeed(Idempotency.replay(response, replayed))
      )
  )
}

// The Idempotency-Key is checked with the other headers, before the body: a request refused before the store (400,
// 401, 403, 413, 415) leaves its key untouched.
const create = (core: Core, request: Request): Effect.Effect<Response> =>
  run(
    core,
    pipe(
      authorize(core, request, "routes:write", Answers.WRITE_SCOPE),
      flatMapNow((principal) => Idempotency.requestKey(request.header(Idempotency.HEADER), principal.id)),
      flatMapNow((requestKey) =>
        pipe(
          Content.readJson(request, Content.CREATE_TYPES, core.limits),
          flatMapNow((body) => validated(Route.validateCreate(body), Answers.invalidRoute)),
          flatMapNow((input) => cataloged(core, input)),
          flatMapNow((input) => createOnce(core, input, requestKey, request.base ?? ""))
        )
      )
    )
  )

const get = (core: Core, request: Request, id: string): Effect.Effect<Response> =>
  run(
    core,
    pipe(
      authorize(core, request, "routes:read", Answers.READ_SCOPE),
      flatMapNow(() => find(core, id)),
      flatMapNow((route) =>
        Conditional.noneMatchHits(request.header("if-none-match"), route.revision)
          ? Exit.succeed(Answers.empty(304, { etag: Conditional.etagOf(route.revision) }))
          : withRoute(core, 200, route)
      )
    ),
    id
  )

const list = (core: Core, request: Request): Effect.Effect<Response> =>
  run(
    core,
    pipe(
      authorize(core, request, "routes:read", Answers.READ_SCOPE),
      flatMapNow(() => validated(ListQuery.parse(request.query), Answers.invalidQuery)),
      flatMapNow((query) =>
        flatMapNow(call(() => core.repository.list(query)), (result) =>
          Exit.succeed(page(query, result, request.base ?? "")))
      )
    )
  )

const update = (core: Core, request: Request, id: string): Effect.Effect<Response> =>
  run(
    core,
    pipe(
      authorize(core, request, "routes:write", Answers.WRITE_SCOPE),
      flatMapNow(() => Content.readJson(request, Content.PATCH_TYPES, core.limits)),
      flatMapNow((body) => validated(Route.validatePatch(body), Answers.invalidRoute)),
      flatMapNow((patch) => cataloged(core, patch)),
      flatMapNow((patch) =>
        call(() => core.repository.update(id, patch, Conditional.ifMatch(request.header("if-match"))))
      ),
      flatMapNow((route) => withRoute(core, 200, route))
    ),
    id
  )

const remove = (core: Core, request: Request, id: string): Effect.Effect<Response> =>
  run(
    core,
    pipe(
      authorize(core, request, "routes:write", Answers.WRITE_SCOPE),
      flatMapNow(() => call(() => core.repository.remove(id, Conditional.ifMatch(request.header("if-match"))))),
      flatMapNow(() => {
        core.answers?.delete(id)
        return Exit.succeed(Answers.empty(204))
      })
    ),
    id
  )

// The path first (outside /v1/routing is the host's), then the method (405).
const dispatch = (core: Core, request: Request): Effect.Effect<Response> | undefined => {
  const path = request.path
  if (path === COLLECTION) {
    switch (request.method) {
      case "GET":
        return list(core, request)
      case "POST":
        return create(core, request)
    }
    return Exit.succeed(Answers.methodNotAllowed(request.method, path, Answers.COLLECTION_METHODS))
  }
  if (path.startsWith(ITEM_PREFIX) && path.indexOf("/", ITEM_PREFIX.length) === -1) {
    const id = path.slice(ITEM_PREFIX.length)
    switch (request.method) {
      case "GET":
        return get(core, request, id)
      case "PATCH":
        return update(core, request, id)
      case "DELETE":
        return remove(core, request, id)
    }
    return Exit.succeed(Answers.methodNotAllowed(request.method, path, Answers.ROUTE_METHODS))
  }
  return undefined
}

const makeCore = (
  repository: Context.Tag.Service<RouteRepository.RouteRepository>,
  authenticator: Context.Tag.Service<Authenticator.Authenticator>,
  config: Options_.Config,
  catalog: Catalog.Names | undefined
): RoutingHandler => {
  const core: Core = {
    repository,
    authenticator,
    limits: Content.bodyLimits(config.maxBodyBytes, config.bodyTimeoutMillis),
    unavailable: Answers.unavailable(config.retryAfterSeconds),
    catalog,
    keyExpiry: Duration.seconds(config.idempotencyKeyExpirySeconds),
    maxKeys: config.idempotencyKeysPerPrincipal,
    maxKeyBytes: config.idempotencyKeyBytesPerPrincipal,
    keysInFlight: new Set(),
    answers: repository.unsafeFindById === undefined ? undefined : new Map()
  }
  return {
    handle: (request) => {
      try {
        return dispatch(core, request)
      } catch (error) {
        // A request view that throws (an adapter's fault): answered and logged, never thrown into the host.
        return Effect.as(
          Effect.logError("route-registry: unexpected error while answering a request", error),
          Answers.INTERNAL_ERROR
        )
      }
    }
  }
}

/**
 * Binds the core to the `RouteRepository` and `Authenticator` in context, and to the `Catalog` when the host
 * declared one; fails with `InvalidOption` naming the first option out of its range. With `Telemetry.layer` in
 * context, the core and its store are instrumented; without it, they are left as they are.
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
          RouteRepository.RouteRepository,
          Authenticator.Authenticator,
          Catalog.Catalog,
          Telemetry.Telemetry
        ]),
        ([repository, authenticator, catalog, telemetry]) =>
          telemetry === undefined
            ? makeCore(repository, authenticator, config, catalog)
            : Telemetry.instrumentHandler(
              makeCore(Telemetry.instrumentRepository(repository), authenticator, config, catalog)
            )
      )
  })

/**
 * The core over explicit services (what `make` does with the ones in context). Throws `InvalidOption` naming the
 * first option out of its range.
 *
 * @since 0.1.0
 */
export const makeWith = (
  repository: Context.Tag.Service<RouteRepository.RouteRepository>,
  authenticator: Context.Tag.Service<Authenticator.Authenticator>,
  options: Options = {},
  catalog?: Catalog.Names
): RoutingHandler =>
  Either.match(Options_.resolve(options), {
    onLeft: (invalid) => {
      throw invalid
    },
    onRight: (config) => makeCore(repository, authenticator, config, catalog)
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
