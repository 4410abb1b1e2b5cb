/**
 * The operations of the routing API on its routes, each reading top to bottom in the contract's order of checks
 * after authentication and scope (`dispatch.ts` takes those first, from the endpoint table): the body or the query,
 * then the store. Each fails with a `Refusal` or a declared error of a service, answered in one place (`answered`).
 *
 * @internal
 */
import { Effect, Either, Exit } from "effect"
import * as Catalog from "../../Catalog.js"
import * as HostPaths from "../../HostPaths.js"
import * as Route from "../../Route.js"
import * as RouteRepository from "../../RouteRepository.js"
import * as Answers from "./answers.js"
import { refuse } from "./answers.js"
import * as ChangeStream from "./changeStream.js"
import * as Conditional from "./conditional.js"
import * as Content from "./content.js"
import { ITEM_PREFIX, type Request, type Response } from "./exchange.js"
import * as Followers from "./followers.js"
import * as History from "./history.js"
import * as Idempotency from "./idempotency.js"
import * as ListQuery from "./listQuery.js"
import * as Match from "./match.js"
import * as Ownership from "./ownership.js"
import * as RouteAnswers from "./routeAnswers.js"
import * as Runner from "./runner.js"
import { type Core, type Failure, fromEither, type Steps, validated, withRoute } from "./steps.js"

/** The `Location` of a stored route, built from its id alone. */
export const location = (id: Route.RouteId): string => ITEM_PREFIX + id

/**
 * What refuses a route's fields besides the grammar: a path the host serves itself, and, with catalog checking on, a
 * function this process has not registered.
 */
export const catalogIssues = (
  core: Core,
  input: Parameters<typeof Catalog.check>[1] & { readonly path?: string | undefined }
): Array<Route.FieldIssue> => {
  const taken = input.path === undefined ? undefined : HostPaths.taking(core.hostPaths, input.path)
  if (core.catalog === undefined && taken === undefined) return []
  return [
    ...(taken === undefined ? [] : [{ path: "path", message: HostPaths.taken(input.path!, taken) }]),
    ...(core.catalog === undefined ? [] : Catalog.check(core.catalog, input))
  ]
}

const cataloged = <A extends Parameters<typeof catalogIssues>[1]>(core: Core, input: A): Effect.Effect<A, Failure> => {
  const issues = catalogIssues(core, input)
  return issues.length === 0 ? Effect.succeed(input) : refuse(Answers.invalidRoute(issues))
}

// A write's dryRun parameter, refused when it is not "true".
const dryRunOf = (request: Request): Effect.Effect<boolean, Failure> => fromEither(History.dryRunOf(request.query))

// A store that keeps its routes in memory is read at once, its answer an `Exit` (`runner.ts`); any other store
// through its Effect.
const find = (core: Core, id: string): Effect.Effect<Route.StoredRoute, Failure> => {
  if (core.memoryRead === undefined) return core.repository.findById(id)
  const route = core.memoryRead.unsafeFindById(id)
  return route === undefined ? Exit.fail(new RouteRepository.RouteNotFound({ id }, true)) : Exit.succeed(route)
}

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
  { createIdempotent }: NonNullable<Core["idempotent"]>,
  input: Route.CreateRoute,
  requestKey: Idempotency.RequestKey,
  base: string,
  options: RouteRepository.WriteOptions
): Effect.Effect<Response, Failure> =>
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
      : Answers.conflict(
        outcome.left.method,
        outcome.left.path,
        outcome.left.conflictingRouteId,
        outcome.left.when
      )
    return Idempotency.replay(response, replayed)
  })

// The Idempotency-Key is checked with the other headers, before the body: a request refused before the store (400,
// 401, 403, 413, 415) leaves its key untouched.
export const create: Steps = (core, request, principal) =>
  Effect.gen(function*() {
    const dryRun = yield* dryRunOf(request)
    const requestKey = yield* Idempotency.requestKey(request.header(Idempotency.HEADER), principal.id)
    const body = yield* Content.readJson(request, Content.CREATE_TYPES, core.limits)
    const input = yield* cataloged(core, yield* validated(Route.validateCreate(body), Answers.invalidRoute))
    yield* Ownership.mayWrite(principal, input)
    const { base = "" } = request, options = { actor: principal.id, dryRun }, once = core.idempotent
    // A dry run (it stores nothing) and a store that remembers no keys create as if the key was absent.
    if (requestKey === undefined || once === undefined || dryRun) {
      return yield* created(core, yield* core.repository.create(input, options), base, dryRun)
    }
    return yield* createOnce(core, once, input, requestKey, base, options)
  })

// The hottest path, a pipe rather than a generator: from memory it ends at once, with no fiber (`runner.ts`).
export const get: Steps = (core, request, _, id) =>
  Runner.flatMapNow(
    find(core, id),
    (route) =>
      Conditional.noneMatchHits(request.header("if-none-match"), route.revision)
        ? Effect.succeed(Answers.empty(304, { etag: Conditional.etagOf(route.revision) }))
        : withRoute(core, 200, route)
  )

export const list: Steps = (core, request) =>
  Effect.gen(function*() {
    const query = yield* validated(ListQuery.parse(request.query), Answers.invalidQuery)
    return RouteAnswers.page(query, yield* core.repository.list(query), request.base ?? "")
  })

export const update: Steps = (core, request, principal, id) =>
  Effect.gen(function*() {
    const options = { actor: principal.id, dryRun: yield* dryRunOf(request) }
    const body = yield* Content.readJson(request, Content.PATCH_TYPES, core.limits)
    const patch = yield* cataloged(core, yield* validated(Route.validatePatch(body), Answers.invalidRoute))
    yield* Ownership.mayWrite(principal, patch)
    const precondition = Ownership.guard(principal, Conditional.ifMatch(request.header("if-match")))
    const route = yield* core.repository.update(id, patch, precondition, options)
    return yield* withRoute(core, 200, route, History.revisionHeaders(route.revision, options.dryRun))
  })

export const remove: Steps = (core, request, principal, id) =>
  Effect.gen(function*() {
    const options = { actor: principal.id, dryRun: yield* dryRunOf(request) }
    const precondition = Ownership.guard(principal, Conditional.ifMatch(request.header("if-match")))
    const revision = yield* core.repository.remove(id, precondition, options)
    if (!options.dryRun) core.answers?.delete(id)
    return Answers.empty(204, History.revisionHeaders(revision, options.dryRun))
  })

// The stream's head is the answer: telemetry times the request to it, and the stream goes on in the connection.
export const changes: Steps = (core, request, principal) =>
  Effect.gen(function*() {
    const source = core.changes
    if (source === undefined) return yield* refuse(Answers.NO_CHANGE_HISTORY)
    const since = yield* validated(
      ChangeStream.parseQuery(request.query, request.header(ChangeStream.LAST_EVENT_ID)),
      Answers.invalidChangesQuery
    )
    const ahead = since === undefined ? undefined : ChangeStream.aheadOf(source.ring, since)
    const log = core.changeLog
    if (ahead !== undefined && log !== undefined && ahead > (yield* log.logAfter(ahead, 0)).revision) {
      const path = (request.header(ChangeStream.LAST_EVENT_ID) ?? "") === "" ? "since" : "Last-Event-ID"
      return yield* refuse(Answers.invalidChangesQuery([{ path, message: ChangeStream.NOT_ISSUED }]))
    }
    const stream = ChangeStream.body(source, since, principal.id, principal.expiresAt)
    if (stream === undefined) return yield* refuse(Answers.tooManyStreams(source.streamsPerPrincipal))
    return yield* Followers.joined(source, request, principal, stream)
  })

export const match: Steps = (core, request) => Match.answer(core.changes?.table, request, core.hostPaths)
