/**
 * The operations of the routing API, each reading top to bottom in the contract's order of checks: authentication
 * and scope, then the body or the query, then the store; and `dispatch`, which picks one by path and method and so
 * knows which operation runs (its telemetry is recorded there). Each is one `Effect.gen`, failing with a `Refusal` or
 * a declared error of a service, and answered from them in one place (`answered`).
 *
 * @internal
 */
import type { Context, Duration } from "effect"
import { Cause, Effect, Either, Option, Redacted } from "effect"
import type * as Authenticator from "../../Authenticator.js"
import * as Catalog from "../../Catalog.js"
import * as HostPaths from "../../HostPaths.js"
import * as Route from "../../Route.js"
import * as RouteRepository from "../../RouteRepository.js"
import * as Answers from "./answers.js"
import { Refusal, refuse } from "./answers.js"
import * as ChangeStream from "./changeStream.js"
import * as Conditional from "./conditional.js"
import * as Content from "./content.js"
import * as Credentials from "./credentials.js"
import * as Dashboard from "./dashboard.js"
import { COLLECTION, ITEM_PREFIX, type Request, type Response } from "./exchange.js"
import * as Followers from "./followers.js"
import * as History from "./history.js"
import * as Idempotency from "./idempotency.js"
import * as ListQuery from "./listQuery.js"
import * as Match from "./match.js"
import * as Ownership from "./ownership.js"
import * as RouteAnswers from "./routeAnswers.js"
import * as ServiceErrors from "./serviceErrors.js"

/** What telemetry calls an operation: one per method served on a path, and the 405s. */
export type Operation =
  | "list"
  | "create"
  | "get"
  | "update"
  | "remove"
  | "changes"
  | "match"
  | "history"
  | "restore"
  | "followers"
  | "report"
  | "method_not_allowed"

/** One route's path as telemetry names it (`http.route`). */
export const ITEM_ROUTE = `${COLLECTION}/{id}`

/**
 * Records an operation's answer (a span, a count, a duration), given where it is known which operation runs and on
 * which route (the collection or `ITEM_ROUTE`).
 */
export type Instrument = (
  request: Request,
  route: string,
  operation: Operation,
  answer: Effect.Effect<Response>
) => Effect.Effect<Response>

/** The `Location` of a stored route, built from its id alone. */
export const location = (id: Route.RouteId): string => ITEM_PREFIX + id

// ---------------------------------------------------------------------------------------------------------------
// The steps the operations are made of
// ---------------------------------------------------------------------------------------------------------------

/** The core: its services, its configuration and what it keeps between requests. */
export interface Core {
  readonly repository: Context.Tag.Service<RouteRepository.RouteRepository>
  readonly authenticator: Context.Tag.Service<Authenticator.Authenticator>
  readonly limits: Content.BodyLimits
  readonly unavailable: Response
  /** The host's function names, when it declared them: a route naming another is refused. */
  readonly catalog: Catalog.Names | undefined
  /** The paths the host serves itself: no route may take them, and `match` answers them as the host's. */
  readonly hostPaths: HostPaths.Paths
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
   * keeps them; for `RouteAnswers.KEPT_ANSWERS` ids at most.
   */
  readonly answers: RouteAnswers.Kept | undefined
  /** Telemetry, when the host turned it on. */
  readonly instrument: Instrument | undefined
  /** What the change stream reads, when the API is built over a route table: its table and history. */
  readonly changes: ChangeStream.Source | undefined
  /** The dashboard's page and assets, when the host turned it on: served below `Dashboard.UI` with no token. */
  readonly dashboard: Dashboard.Assets | undefined
}

type ServiceError = ServiceErrors.ServiceError

// The answer to an operation's steps: a success as is, a refusal as its answer, a declared error of a service as its
// problem (`ServiceErrors`), and a defect or an undeclared error logged and answered `internal_error`.
const answered = (core: Core, id = "") => (steps: Effect.Effect<Response, ServiceError | Refusal>) =>
  Effect.catchAllCause(steps, (cause): Effect.Effect<Response> => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      const error = failure.value
      if (error instanceof Refusal) return Effect.succeed(error.response)
      const response = ServiceErrors.answer(error, { unavailable: core.unavailable, id })
      if (response !== undefined) return response
    } else if (Cause.isInterruptedOnly(cause)) {
      // No failure to answer, and no one waiting for the answer.
      return Effect.failCause(cause as Cause.Cause<never>)
    }
    return Effect.as(Effect.logError("route-registry: unexpected error while answering a request", cause), internal)
  })

const internal = Answers.INTERNAL_ERROR

// Authentication and scope come first, before anything is read: an unauthenticated caller learns nothing more. Called
// inside an operation's `Effect.gen`, so a service that throws is a defect there.
const authorize = (
  core: Core,
  request: Request,
  scope: Authenticator.Scope,
  refusal: Response
): Effect.Effect<
  Authenticator.Principal,
  Refusal | Authenticator.InvalidToken | Authenticator.AuthenticatorUnavailable
> => {
  const token = Credentials.credential(request.header("authorization"))
  if (!Redacted.isRedacted(token)) return refuse(token)
  return Effect.filterOrFail(
    core.authenticator.authenticate(token),
    (principal) => Ownership.holds(principal.scopes, scope),
    () => new Refusal(refusal)
  )
}

const validated = <A>(
  result: Either.Either<A, ReadonlyArray<Route.FieldIssue>>,
  refusal: (errors: ReadonlyArray<Route.FieldIssue>) => Response
): Effect.Effect<A, Refusal> => Either.isRight(result) ? Effect.succeed(result.right) : refuse(refusal(result.left))

// A route on a path the host serves itself is refused; so is, with catalog checking on, a route naming a function
// this process has not registered.
const cataloged = <A extends Parameters<typeof Catalog.check>[1] & { readonly path?: string | undefined }>(
  core: Core,
  input: A
): Effect.Effect<A, Refusal> => {
  const taken = input.path === undefined ? undefined : HostPaths.taking(core.hostPaths, input.path)
  if (core.catalog === undefined && taken === undefined) return Effect.succeed(input)
  const issues = [
    ...(taken === undefined ? [] : [{ path: "path", message: HostPaths.taken(input.path!, taken) }]),
    ...(core.catalog === undefined ? [] : Catalog.check(core.catalog, input))
  ]
  return issues.length === 0 ? Effect.succeed(input) : refuse(Answers.invalidRoute(issues))
}

// A write's dryRun parameter, refused when it is not "true".
const dryRunOf = (request: Request): Effect.Effect<boolean, Refusal> => {
  const dryRun = History.dryRunOf(request.query)
  return Either.isRight(dryRun) ? Effect.succeed(dryRun.right) : refuse(dryRun.left)
}

// A store that keeps its routes in memory is read at once; any other store through its Effect.
const find = (core: Core, id: string): Effect.Effect<Route.StoredRoute, ServiceError> => {
  const unsafeFindById = core.repository.unsafeFindById
  if (unsafeFindById === undefined) return core.repository.findById(id)
  const route = unsafeFindById(id)
  return route === undefined ? Effect.fail(new RouteRepository.RouteNotFound({ id }, true)) : Effect.succeed(route)
}

// A route's answer with its ETag, kept per revision when the store keeps its routes in memory (routeAnswers.ts).
const withRoute = (
  core: Core,
  status: number,
  route: Route.StoredRoute,
  headers?: Record<string, string>
): Effect.Effect<Response> => RouteAnswers.answer(core.answers, status, route, headers)

// ---------------------------------------------------------------------------------------------------------------
// The operations
// ---------------------------------------------------------------------------------------------------------------

const created = (core: Core, route: Route.StoredRoute, base: string, dryRun = false): Effect.Effect<Response> =>
  withRoute(core, 201, route, {
    location: base + location(route.id),
    ...History.revisionHeaders(route.revision, dryRun)
  })

// With an Idempotency-Key: created at most once per key and principal, the first answer (201 or 409) given again.
const createOnce = (
  core: Core,
  createIdempotent: NonNullable<Core["repository"]["createIdempotent"]>,
  input: Route.CreateRoute,
  requestKey: Idempotency.RequestKey,
  base: string,
  options: RouteRepository.WriteOptions
): Effect.Effect<Response, ServiceError> =>
  Effect.gen(function*() {
    const { outcome, replayed } = yield* Idempotency.exclusive(core.keysInFlight, requestKey, () =>
      createIdempotent(input, {
        key: requestKey.key,
        principal: requestKey.principal,
        expiresAfter: core.keyExpiry,
        maxKeys: core.maxKeys,
        maxBytes: core.maxKeyBytes
      }, options))
    const response = Either.isRight(outcome)
      ? yield* created(core, outcome.right, base)
      : Answers.conflict(outcome.left.method, outcome.left.path, outcome.left.conflictingRouteId)
    return Idempotency.replay(response, replayed)
  })

// The Idempotency-Key is checked with the other headers, before the body: a request refused before the store (400,
// 401, 403, 413, 415) leaves its key untouched.
const create = (core: Core, request: Request): Effect.Effect<Response> =>
  Effect.gen(function*() {
    const principal = yield* authorize(core, request, "routes:write", Answers.WRITE_SCOPE)
    const dryRun = yield* dryRunOf(request)
    const requestKey = yield* Idempotency.requestKey(request.header(Idempotency.HEADER), principal.id)
    const body = yield* Content.readJson(request, Content.CREATE_TYPES, core.limits)
    const input = yield* cataloged(core, yield* validated(Route.validateCreate(body), Answers.invalidRoute))
    yield* Ownership.mayWrite(principal, input)
    const { base = "" } = request, options = { actor: principal.id, dryRun }, once = core.repository.createIdempotent
    // A dry run (it stores nothing) and a store that remembers no keys create as if the key was absent.
    if (requestKey === undefined || once === undefined || dryRun) {
      return yield* created(core, yield* core.repository.create(input, options), base, dryRun)
    }
    return yield* createOnce(core, once, input, requestKey, base, options)
  }).pipe(answered(core))

// The hottest path, a pipe rather than a generator: measured in-process, a GET from memory cost about a quarter less.
const get = (core: Core, request: Request, id: string): Effect.Effect<Response> =>
  authorize(core, request, "routes:read", Answers.READ_SCOPE).pipe(
    Effect.flatMap(() => find(core, id)),
    Effect.flatMap((route) =>
      Conditional.noneMatchHits(request.header("if-none-match"), route.revision)
        ? Effect.succeed(Answers.empty(304, { etag: Conditional.etagOf(route.revision) }))
        : withRoute(core, 200, route)
    ),
    answered(core, id)
  )

const list = (core: Core, request: Request): Effect.Effect<Response> =>
  Effect.gen(function*() {
    yield* authorize(core, request, "routes:read", Answers.READ_SCOPE)
    const query = yield* validated(ListQuery.parse(request.query), Answers.invalidQuery)
    return RouteAnswers.page(query, yield* core.repository.list(query), request.base ?? "")
  }).pipe(answered(core))

const update = (core: Core, request: Request, id: string): Effect.Effect<Response> =>
  Effect.gen(function*() {
    const principal = yield* authorize(core, request, "routes:write", Answers.WRITE_SCOPE)
    const options = { actor: principal.id, dryRun: yield* dryRunOf(request) }
    const body = yield* Content.readJson(request, Content.PATCH_TYPES, core.limits)
    const patch = yield* cataloged(core, yield* validated(Route.validatePatch(body), Answers.invalidRoute))
    yield* Ownership.mayWrite(principal, patch)
    const precondition = Ownership.guard(principal, Conditional.ifMatch(request.header("if-match")))
    const route = yield* core.repository.update(id, patch, precondition, options)
    return yield* withRoute(core, 200, route, History.revisionHeaders(route.revision, options.dryRun))
  }).pipe(answered(core, id))

const remove = (core: Core, request: Request, id: string): Effect.Effect<Response> =>
  Effect.gen(function*() {
    const principal = yield* authorize(core, request, "routes:write", Answers.WRITE_SCOPE)
    const options = { actor: principal.id, dryRun: yield* dryRunOf(request) }
    const precondition = Ownership.guard(principal, Conditional.ifMatch(request.header("if-match")))
    const revision = yield* core.repository.remove(id, precondition, options)
    if (!options.dryRun) core.answers?.delete(id)
    return Answers.empty(204, History.revisionHeaders(revision, options.dryRun))
  }).pipe(answered(core, id))

// The stream's head is the answer: telemetry times the request to it, and the stream goes on in the connection.
const changes = (core: Core, request: Request): Effect.Effect<Response> =>
  Effect.gen(function*() {
    const principal = yield* authorize(core, request, "routes:read", Answers.READ_SCOPE)
    const source = core.changes
    if (source === undefined) return yield* refuse(Answers.NO_CHANGE_HISTORY)
    const since = yield* validated(
      ChangeStream.parseQuery(request.query, request.header(ChangeStream.LAST_EVENT_ID)),
      Answers.invalidChangesQuery
    )
    const ahead = since === undefined ? undefined : ChangeStream.aheadOf(source.history, since)
    const logAfter = core.repository.logAfter
    if (ahead !== undefined && logAfter !== undefined && ahead > (yield* logAfter(ahead, 0)).revision) {
      const path = (request.header(ChangeStream.LAST_EVENT_ID) ?? "") === "" ? "since" : "Last-Event-ID"
      return yield* refuse(Answers.invalidChangesQuery([{ path, message: ChangeStream.NOT_ISSUED }]))
    }
    const stream = ChangeStream.body(source, since, principal.id, principal.expiresAt)
    if (stream === undefined) return yield* refuse(Answers.tooManyStreams(source.streamsPerPrincipal))
    return yield* Followers.joined(source, request, principal, stream)
  }).pipe(answered(core))

const match = (core: Core, request: Request): Effect.Effect<Response> =>
  Effect.gen(function*() {
    yield* authorize(core, request, "routes:read", Answers.READ_SCOPE)
    return yield* Match.answer(core.changes?.table, request, core.hostPaths)
  }).pipe(answered(core))

// An answer, built; a request view that throws (an adapter's fault) is answered and logged, never thrown into the host.
const attempt = <A extends Effect.Effect<Response> | undefined>(build: () => A): A | Effect.Effect<Response> => {
  try {
    return build()
  } catch (error) {
    return Effect.as(
      Effect.logError("route-registry: unexpected error while answering a request", error),
      Answers.INTERNAL_ERROR
    )
  }
}

// The operation's answer, with its telemetry when it is on: here the operation and its route are known.
const served = (
  core: Core,
  request: Request,
  route: string,
  operation: Operation,
  build: () => Effect.Effect<Response>
): Effect.Effect<Response> => {
  const response = attempt(build)
  return core.instrument === undefined ? response : core.instrument(request, route, operation, response)
}

const notAllowed = (core: Core, request: Request, route: string, allow: string): Effect.Effect<Response> =>
  served(
    core,
    request,
    route,
    "method_not_allowed",
    () => Effect.succeed(Answers.methodNotAllowed(request.method, request.path, allow))
  )

// A follower's store serves reads only: every other method is answered as one its paths do not serve.
const readOnly = (core: Core, request: Request, route: string): Effect.Effect<Response> =>
  served(core, request, route, "method_not_allowed", () => Effect.succeed(Answers.READ_ONLY))

// The steps the change log's operations (history.ts) are made of.
const LOG_STEPS: History.Steps<Core> = {
  run: (core, steps, id) => answered(core, id)(steps),
  authorize,
  withRoute,
  served,
  repository: (core) => core.repository,
  limits: (core) => core.limits,
  hostPaths: (core) => core.hostPaths,
  changed: (core, id) => core.answers?.delete(id)
}

// The steps the fleet's operations (followers.ts) are made of.
const FLEET_STEPS: Followers.Steps<Core> = {
  run: (core, steps) => answered(core)(steps),
  authorize,
  served,
  source: (core) => core.changes,
  limits: (core) => core.limits
}

// The path first (outside the collection is the host's), then the method (405), on a follower's read-only store too.
const dispatch = (core: Core, request: Request): Effect.Effect<Response> | undefined => {
  const path = request.path
  if (core.dashboard !== undefined && Dashboard.owns(path)) return Dashboard.serve(core.dashboard, request)
  // The log's paths come before a route's own (`/v1/routing/history` is no id).
  const logged = History.dispatch(
    LOG_STEPS,
    core,
    request,
    () => readOnly(core, request, History.RESTORE),
    (route, allow) => notAllowed(core, request, route, allow)
  )
  if (logged !== undefined) return logged
  const fleet = Followers.dispatch(
    FLEET_STEPS,
    core,
    request,
    (route, allow) => notAllowed(core, request, route, allow)
  )
  if (fleet !== undefined) return fleet
  if (path === COLLECTION) {
    if (request.method !== "GET" && core.repository.readOnly === true) return readOnly(core, request, COLLECTION)
    switch (request.method) {
      case "GET":
        return served(core, request, COLLECTION, "list", () => list(core, request))
      case "POST":
        return served(core, request, COLLECTION, "create", () => create(core, request))
    }
    return notAllowed(core, request, COLLECTION, Answers.COLLECTION_METHODS)
  }
  if (path === Answers.CHANGES) {
    return request.method === "GET"
      ? served(core, request, Answers.CHANGES, "changes", () => changes(core, request))
      : notAllowed(core, request, Answers.CHANGES, Answers.CHANGES_METHODS)
  }
  if (path === Answers.MATCH) {
    return request.method === "GET"
      ? served(core, request, Answers.MATCH, "match", () => match(core, request))
      : notAllowed(core, request, Answers.MATCH, Answers.MATCH_METHODS)
  }
  if (path.startsWith(ITEM_PREFIX) && path.indexOf("/", ITEM_PREFIX.length) === -1) {
    const id = path.slice(ITEM_PREFIX.length)
    if (request.method !== "GET" && core.repository.readOnly === true) return readOnly(core, request, ITEM_ROUTE)
    switch (request.method) {
      case "GET":
        return served(core, request, ITEM_ROUTE, "get", () => get(core, request, id))
      case "PATCH":
        return served(core, request, ITEM_ROUTE, "update", () => update(core, request, id))
      case "DELETE":
        return served(core, request, ITEM_ROUTE, "remove", () => remove(core, request, id))
    }
    return notAllowed(core, request, ITEM_ROUTE, Answers.ROUTE_METHODS)
  }
  return undefined
}

/**
 * The answer to `request`, `undefined` (synchronously) for a path outside the collection; never throws, and its
 * Effect never fails.
 */
export const handle = (core: Core, request: Request): Effect.Effect<Response> | undefined =>
  attempt(() => dispatch(core, request))
