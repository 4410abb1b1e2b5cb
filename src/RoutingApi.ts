/**
 * The routing API as an Effect `HttpApi`: the machine-readable contract. `openApi` is its OpenAPI 3.1 document,
 * and `HttpApiClient.make(RoutingApi)` its typed client. Every error is an RFC 9457 problem document, one schema
 * per problem code.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { COLLECTION } from "./internal/http/exchange.js"
import { pascal, transform } from "./internal/http/openApi.js"
import * as Limits from "./internal/limits.js"
import * as Problem from "./Problem.js"
import * as Route from "./Route.js"

// The path of one route, in the HttpApi's syntax.
const ITEM = `${COLLECTION}/:id` as const

const problem = <C extends Problem.Code, F extends Schema.Struct.Fields = Record<never, never>>(code: C, fields?: F) =>
  Schema.Struct({
    type: Schema.String.annotations({ jsonSchema: { type: "string", format: "uri-reference" } }),
    title: Schema.String,
    status: Schema.Literal(Problem.codes[code]).annotations({
      jsonSchema: { type: "integer", enum: [Problem.codes[code]] }
    }),
    detail: Schema.String,
    code: Schema.Literal(code),
    ...(fields ?? {} as F)
  }).pipe(
    HttpApiSchema.withEncoding({ kind: "Json", contentType: Problem.CONTENT_TYPE }),
    (schema) =>
      schema.annotations({
        ...HttpApiSchema.annotations({ status: Problem.codes[code] }),
        identifier: `${pascal(code)}Problem`,
        description: Problem.descriptions[code]
      })
  )

const FieldErrors = Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))

/**
 * `400`: the Bearer credential is empty or malformed.
 *
 * @since 0.1.0
 */
export const InvalidRequestProblem = problem("invalid_request")
/**
 * `400`: the body is not JSON.
 *
 * @since 0.1.0
 */
export const MalformedJsonProblem = problem("malformed_json")
/**
 * `400`: the body breaks the route rules, each problem in `errors`.
 *
 * @since 0.1.0
 */
export const InvalidRouteProblem = problem("invalid_route", { errors: FieldErrors })
/**
 * `400`: a listing or change-stream query breaks its rules; `errors` names each parameter.
 *
 * @since 0.2.0
 */
export const InvalidQueryProblem = problem("invalid_query", { errors: FieldErrors })
/**
 * `401`: no bearer token.
 *
 * @since 0.1.0
 */
export const UnauthenticatedProblem = problem("unauthenticated")
/**
 * `401`: a token the authenticator does not accept.
 *
 * @since 0.1.0
 */
export const InvalidTokenProblem = problem("invalid_token")
/**
 * `403`: the token lacks the scope.
 *
 * @since 0.1.0
 */
export const InsufficientScopeProblem = problem("insufficient_scope")
/**
 * `404`: no route has the id.
 *
 * @since 0.1.0
 */
export const RouteNotFoundProblem = problem("route_not_found")
/**
 * `404`: the process does not serve this path (`/v1/routing/match` and `/v1/routing/changes` without a route table).
 *
 * @since 0.4.0
 */
export const NotFoundProblem = problem("not_found")
/**
 * `405`: the path is served with other methods, listed in `Allow`.
 *
 * @since 0.1.0
 */
export const MethodNotAllowedProblem = problem("method_not_allowed")
/**
 * `408`: the body did not arrive in time.
 *
 * @since 0.1.0
 */
export const RequestTimeoutProblem = problem("request_timeout")
/**
 * `409`: a route of the same method and shape exists; `conflictingRouteId` names it.
 *
 * @since 0.1.0
 */
export const RouteConflictProblem = problem("route_conflict", { conflictingRouteId: Route.RouteId })
/**
 * `412`: `If-Match` names no current version.
 *
 * @since 0.2.0
 */
export const PreconditionFailedProblem = problem("precondition_failed")
/**
 * `413`: the body is over the limit.
 *
 * @since 0.1.0
 */
export const PayloadTooLargeProblem = problem("payload_too_large")
/**
 * `415`: the body is not JSON by its `Content-Type`.
 *
 * @since 0.1.0
 */
export const UnsupportedMediaTypeProblem = problem("unsupported_media_type")
/**
 * `500`: an unexpected failure, logged and never described.
 *
 * @since 0.1.0
 */
export const InternalErrorProblem = problem("internal_error")
/**
 * `503`: the store did not answer in time; nothing was written.
 *
 * @since 0.1.0
 */
export const StoreUnavailableProblem = problem("store_unavailable")
/**
 * `503`: the token cannot be checked now (an identity provider's key set cannot be fetched); nothing was done.
 *
 * @since 0.5.0
 */
export const AuthenticatorUnavailableProblem = problem("authenticator_unavailable")
/**
 * `400`: the `Idempotency-Key` is not one valid key.
 *
 * @since 0.3.0
 */
export const InvalidIdempotencyKeyProblem = problem("invalid_idempotency_key")
/**
 * `409`: a create with the key is still running.
 *
 * @since 0.3.0
 */
export const IdempotencyKeyInUseProblem = problem("idempotency_key_in_use")
/**
 * `422`: the key was used with another body.
 *
 * @since 0.3.0
 */
export const IdempotencyKeyReusedProblem = problem("idempotency_key_reused")
/**
 * `429`: the client holds as many keys as it may.
 *
 * @since 0.3.0
 */
export const TooManyIdempotencyKeysProblem = problem("too_many_idempotency_keys")
/**
 * `409`: the route would add a method past the most the registry stores.
 *
 * @since 0.3.0
 */
export const TooManyMethodsProblem = problem("too_many_methods")

/**
 * `304 Not Modified` to a get sent with `If-None-Match`: the caller's copy is current. The typed client fails with
 * it, so a caller that sent the header catches it by tag (`Effect.catchTag("NotModified", …)`).
 *
 * @since 0.2.0
 */
export class NotModified extends HttpApiSchema.EmptyError<NotModified>()({ tag: "NotModified", status: 304 }) {}

/**
 * One page of a listing: routes in ascending id order, and the cursor of the next page (`null` on the last page).
 *
 * @since 0.2.0
 */
export const RoutePage = Schema.Struct({
  items: Schema.Array(Route.Route),
  nextCursor: Schema.NullOr(Schema.String).annotations({
    description: "Pass it as cursor to get the next page, with the same filters; null exactly when no route follows."
  })
}).annotations({ identifier: "RoutePage" })

/**
 * The query of a listing. Every parameter is optional; the filters combine with AND. Values are decoded as
 * `URLSearchParams` decodes them (`+` is a space).
 *
 * @since 0.2.0
 */
export const ListParams = Schema.Struct({
  limit: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, Limits.MAX_PAGE_SIZE)).annotations({
      jsonSchema: {
        type: "integer",
        minimum: 1,
        maximum: Limits.MAX_PAGE_SIZE,
        default: Limits.DEFAULT_PAGE_SIZE,
        description: "Most routes in the page, written in decimal digits only (no sign, exponent or fraction)."
      }
    })
  ),
  cursor: Schema.optional(Schema.String.annotations({
    description: "The nextCursor of a previous page, unchanged; it works with any filters. Any other value is refused."
  })),
  method: Schema.optional(Route.HttpMethod.annotations({ description: "Only routes with exactly this method." })),
  pathPrefix: Schema.optional(
    Schema.String.pipe(Schema.startsWith("/"), Schema.maxLength(Route.MAX_PATH_LENGTH)).annotations({
      title: "Path prefix",
      description: "Only routes whose path starts with this string, compared byte for byte (% and _ are literal)."
    })
  ),
  handler: Schema.optional(Route.HandlerName.annotations({ description: "Only routes with exactly this handler." })),
  middleware: Schema.optional(
    Route.MiddlewareName.annotations({ description: "Only routes whose middleware list contains this name." })
  ),
  q: Schema.optional(
    Schema.String.pipe(Schema.minLength(1), Schema.maxLength(Limits.MAX_SEARCH_LENGTH)).annotations({
      description: "Only routes whose path, handler or one of whose middleware names contains this text, compared " +
        "byte for byte."
    })
  )
})

const tagList = "* or a comma-separated list of entity tags, as ETag printed them"

/**
 * `If-Match` on an update or a delete: when it names no current tag of the route, the answer is 412 and nothing
 * changes.
 *
 * @since 0.2.0
 */
export const IfMatch = Schema.Struct({
  "if-match": Schema.optional(Schema.String.annotations({
    description: `Change the route only if its current ETag is one of these (${tagList}); otherwise 412.`
  }))
})

/**
 * `If-None-Match` on a get: when it names the route's current tag, the answer is 304 without a body.
 *
 * @since 0.2.0
 */
export const IfNoneMatch = Schema.Struct({
  "if-none-match": Schema.optional(Schema.String.annotations({
    description: `Answer 304 without a body if the route's current ETag is one of these (${tagList}).`
  }))
})

/**
 * The change stream as the API describes it: Server-Sent Events, text that does not end while the client listens.
 *
 * @since 0.4.0
 */
export const ChangeEvents = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })
).annotations({
  identifier: "ChangeEvents",
  description: "Server-Sent Events: upsert (data: a route, as a get answers it), delete (data: {\"id\"}), ready " +
    "(data: {\"routes\": n}) and reset (data: {}); upsert, delete and ready carry an id, the cursor to resume from. " +
    "A comment line (:) is sent at least every 15 s."
})

/**
 * The query of the change stream: at most the cursor to resume from.
 *
 * @since 0.4.0
 */
export const ChangesParams = Schema.Struct({
  since: Schema.optional(Schema.String.annotations({
    description: "The id of the last event received, to resume after it; without it, the stream starts with every " +
      "route. A cursor this process cannot resume from is answered with a reset event; one this API never issued " +
      "is refused."
  }))
})

/**
 * The header an EventSource resumes with; it wins over `since`.
 *
 * @since 0.4.0
 */
export const LastEventId = Schema.Struct({
  "last-event-id": Schema.optional(Schema.String.annotations({
    description: "The id of the last event received (an EventSource sends it when it reconnects); it wins over since."
  }))
})

/**
 * The question of `GET /v1/routing/match`: a request's method and target.
 *
 * @since 0.4.0
 */
export const MatchParams = Schema.Struct({
  method: Route.HttpMethod.annotations({ description: "The request's method, as the router receives it." }),
  path: Schema.String.pipe(Schema.startsWith("/")).annotations({
    description: "The request's target: its path, optionally with a query string (ignored), as the router receives " +
      "it (percent-escapes included: send % as %25 and + as %2B in this parameter)."
  })
})

/**
 * The answer of `GET /v1/routing/match`: the decision of this process's table (`outcome`, and for a route the route
 * and its parameters), the methods routes serve the path with (`allow`), and every other route whose pattern matches
 * the path with why it does not serve the request.
 *
 * @since 0.4.0
 */
export const Match = Schema.Struct({
  outcome: Schema.Literal("route", "method_not_allowed", "not_found", "bad_path"),
  route: Schema.NullOr(Route.Route),
  params: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })),
  allow: Schema.Array(Schema.String),
  candidates: Schema.Array(Schema.Struct({ route: Route.Route, reason: Schema.String }))
}).annotations({
  identifier: "Match",
  description: "route and params are null unless outcome is route. allow is sorted, with HEAD wherever GET is; " +
    "empty for not_found and bad_path. candidates come the most specific first, each with a sentence saying why it " +
    "does not serve: another method, or the segment and the rule of precedence by which the serving route beats it."
})

/**
 * `dryRun=true` on a write: checked and answered as the write would be, but nothing is stored (no revision, no log
 * entry, no change event, no `Registry-Revision`).
 *
 * @since 0.5.0
 */
export const DryRunParams = Schema.Struct({
  dryRun: Schema.optional(
    Schema.Literal("true").annotations({
      description: "true to check and answer the write without making it; any other value is 400 invalid_query."
    })
  )
})

/**
 * One entry of the change log: the change at `revision`, who made it, and the route before and after it.
 *
 * @since 0.5.0
 */
export const HistoryEntry = Schema.Struct({
  revision: Schema.Int.annotations({
    description: "The change's revision: increasing in the order changes took effect."
  }),
  at: Schema.String.annotations({ description: "When the change took effect, RFC 3339 UTC with milliseconds." }),
  actor: Schema.NullOr(Schema.String).annotations({ description: "The principal that made it, or null." }),
  action: Schema.Literal("create", "update", "delete", "restore"),
  routeId: Route.RouteId,
  before: Schema.NullOr(Route.Route),
  after: Schema.NullOr(Route.Route),
  restoredFrom: Schema.optional(Schema.Int.annotations({ description: "The revision a restore went back to." }))
}).annotations({ identifier: "HistoryEntry" })

/**
 * One page of the change log, newest first.
 *
 * @since 0.5.0
 */
export const HistoryPage = Schema.Struct({
  items: Schema.Array(HistoryEntry),
  nextCursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "HistoryPage" })

const historyFilters = {
  limit: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 200)).annotations({
      jsonSchema: { type: "integer", minimum: 1, maximum: 200, default: 50, description: "Most entries in the page." }
    })
  ),
  cursor: Schema.optional(Schema.String.annotations({ description: "The nextCursor of a previous page, unchanged." })),
  actor: Schema.optional(Schema.String.annotations({ description: "Only entries of changes this principal made." })),
  action: Schema.optional(Schema.Literal("create", "update", "delete", "restore"))
}

/**
 * The query of `GET /v1/routing/history`.
 *
 * @since 0.5.0
 */
export const HistoryParams = Schema.Struct({
  ...historyFilters,
  routeId: Schema.optional(Route.RouteId.annotations({ description: "Only entries of this route." }))
})

/**
 * The query of `GET /v1/routing/{id}/history`.
 *
 * @since 0.5.0
 */
export const RouteHistoryParams = Schema.Struct(historyFilters)

/**
 * The body of a restore: the revision of the route's log to go back to.
 *
 * @since 0.5.0
 */
export const RestoreBody = Schema.Struct({ revision: Schema.Int.pipe(Schema.positive()) })

/**
 * @since 0.5.0
 */
export const InvalidRestoreProblem = problem("invalid_restore", { errors: FieldErrors })

const RouteIdParam = Schema.Struct({
  id: Schema.String.annotations({
    description: "The route's id. A string that is no route's id, even one that could never be, is answered 404."
  })
})

/**
 * Documents the bearer scheme; the check itself is the library's (see `Authenticator`).
 *
 * @since 0.1.0
 */
export class BearerAuth extends HttpApiMiddleware.Tag<BearerAuth>()("route-registry/RoutingApi/BearerAuth", {
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/**
 * @since 0.1.0
 */
export class RoutingGroup extends HttpApiGroup.make("routing")
  .add(
    HttpApiEndpoint.get("list", COLLECTION)
      .setUrlParams(ListParams)
      .addSuccess(RoutePage)
      .addError(InvalidQueryProblem)
      .annotate(OpenApi.Summary, "List routes")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers one page of routes in ascending id order (creation order). " +
          "A parameter given twice, an unknown parameter or a value breaking its rule is 400 invalid_query, " +
          "every problem listed."
      )
  )
  .add(
    HttpApiEndpoint.get("changes", `${COLLECTION}/changes`)
      .setUrlParams(ChangesParams)
      .setHeaders(LastEventId)
      .addSuccess(ChangeEvents)
      .addError(InvalidQueryProblem)
      .annotate(OpenApi.Summary, "Follow every change")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers text/event-stream and stays open: without a cursor, one upsert " +
          "per route, then ready, then every change as it happens; with a cursor, the changes after it, then " +
          "ready, then every change (a reset first, then every route, when this process no longer holds them). " +
          "Any query parameter but since is 400 invalid_query."
      )
  )
  .add(
    HttpApiEndpoint.get("match", `${COLLECTION}/match`)
      .setUrlParams(MatchParams)
      .addSuccess(Match)
      .addError(InvalidQueryProblem)
      .addError(NotFoundProblem)
      .annotate(OpenApi.Summary, "Which route serves a request")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers the decision this process's route table makes for the request, as " +
          "its router makes it (normalising, HEAD served by GET, precedence), with every other route whose pattern " +
          "matches the path and why it does not serve. A missing or invalid method or path, or any other " +
          "parameter, is 400 invalid_query; a process that keeps no route table answers 404 not_found."
      )
  )
  .add(
    HttpApiEndpoint.post("create", COLLECTION)
      .setPayload(Route.CreateRoute)
      .addSuccess(Route.Route, { status: 201 })
      .addError(MalformedJsonProblem)
      .addError(InvalidRouteProblem)
      .addError(PayloadTooLargeProblem)
      .addError(RequestTimeoutProblem)
      .addError(UnsupportedMediaTypeProblem)
      .addError(RouteConflictProblem)
      .addError(InvalidIdempotencyKeyProblem)
      .addError(IdempotencyKeyInUseProblem)
      .addError(IdempotencyKeyReusedProblem)
      .addError(TooManyIdempotencyKeysProblem)
      .addError(TooManyMethodsProblem)
      .annotate(OpenApi.Summary, "Create a route")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope, or routes:write:<prefix> for a route under that prefix. Answers 201 with the stored route, its Location and its ETag. " +
          "With an Idempotency-Key, a retry gets the first answer again instead of creating twice. Every write " +
          "answers Registry-Revision, its change's revision (not on a dry run)."
      )
  )
  .add(
    HttpApiEndpoint.get("history", `${COLLECTION}/history`)
      .setUrlParams(HistoryParams)
      .addSuccess(HistoryPage)
      .addError(InvalidQueryProblem)
      .annotate(OpenApi.Summary, "Read the change log")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers a page of the change log, newest first, with a Link to the next."
      )
  )
  .add(
    HttpApiEndpoint.get("routeHistory", `${ITEM}/history`)
      .setPath(RouteIdParam)
      .setUrlParams(RouteHistoryParams)
      .addSuccess(HistoryPage)
      .addError(InvalidQueryProblem)
      .addError(RouteNotFoundProblem)
      .annotate(OpenApi.Summary, "Read one route's change log")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. A deleted route's history stays readable; 404 only when the log holds " +
          "nothing of the id."
      )
  )
  .add(
    HttpApiEndpoint.post("restore", `${ITEM}/restore`)
      .setPath(RouteIdParam)
      .setUrlParams(DryRunParams)
      .setHeaders(IfMatch)
      .setPayload(RestoreBody)
      .addSuccess(Route.Route)
      .addSuccess(Route.Route, { status: 201 })
      .addError(MalformedJsonProblem)
      .addError(InvalidRestoreProblem)
      .addError(InvalidQueryProblem)
      .addError(RouteNotFoundProblem)
      .addError(RouteConflictProblem)
      .addError(PreconditionFailedProblem)
      .addError(PayloadTooLargeProblem)
      .addError(UnsupportedMediaTypeProblem)
      .addError(TooManyMethodsProblem)
      .annotate(OpenApi.Summary, "Restore a route to a revision")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope, or routes:write:<prefix> for a route under that prefix. Makes the route what it was right after the change at that revision of its " +
          "log: 200 for a route still stored (If-Match honoured), 201 with a new id for a deleted one. Answers " +
          "Registry-Revision, the revision of the restore."
      )
  )
  .add(
    HttpApiEndpoint.get("get", ITEM)
      .setPath(RouteIdParam)
      .setHeaders(IfNoneMatch)
      .addSuccess(Route.Route)
      .addError(NotModified)
      .addError(RouteNotFoundProblem)
      .annotate(OpenApi.Summary, "Get a route by id")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers the route with its ETag, or 304 when If-None-Match names that tag."
      )
  )
  .add(
    HttpApiEndpoint.patch("update", ITEM)
      .setPath(RouteIdParam)
      .setHeaders(IfMatch)
      .setPayload(Route.PatchRoute)
      .addSuccess(Route.Route)
      .addError(MalformedJsonProblem)
      .addError(InvalidRouteProblem)
      .addError(RouteNotFoundProblem)
      .addError(RequestTimeoutProblem)
      .addError(RouteConflictProblem)
      .addError(PreconditionFailedProblem)
      .addError(PayloadTooLargeProblem)
      .addError(UnsupportedMediaTypeProblem)
      .addError(TooManyMethodsProblem)
      .annotate(OpenApi.Summary, "Update a route")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope, or routes:write:<prefix> for a route under that prefix. The fields given replace the stored ones; id and createdAt never change. " +
          "Answers the whole updated route with its new ETag; a patch that changes nothing keeps the ETag. " +
          "Registry-Revision and ?dryRun=true as on create."
      )
  )
  .add(
    HttpApiEndpoint.del("delete", ITEM)
      .setPath(RouteIdParam)
      .setHeaders(IfMatch)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(RouteNotFoundProblem)
      .addError(PreconditionFailedProblem)
      .annotate(OpenApi.Summary, "Delete a route")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope, or routes:write:<prefix> for a route under that prefix. Answers 204 without a body; its method and shape are free again at once. " +
          "Registry-Revision and ?dryRun=true as on create."
      )
  )
  // Errors every endpoint can answer.
  .addError(InvalidRequestProblem)
  .addError(UnauthenticatedProblem)
  .addError(InvalidTokenProblem)
  .addError(InsufficientScopeProblem)
  .addError(MethodNotAllowedProblem)
  .addError(InternalErrorProblem)
  .addError(StoreUnavailableProblem)
  .addError(AuthenticatorUnavailableProblem)
  .middleware(BearerAuth)
  .annotate(OpenApi.Description, "Route definitions: create, read, list, update and delete them.")
{}

/**
 * @since 0.1.0
 */
export class RoutingApi extends HttpApi.make("route-registry")
  .add(RoutingGroup)
  .annotate(OpenApi.Title, "Route registry")
  .annotate(OpenApi.Version, "1")
  .annotate(
    OpenApi.Description,
    "Stores route definitions: an HTTP method and a path pattern bound to ordered middleware names and a handler. " +
      "Every request needs a bearer token; every error is an RFC 9457 problem document with a stable code."
  )
  .annotate(OpenApi.Transform, transform)
{}

/**
 * The OpenAPI 3.1 document of the API.
 *
 * @since 0.1.0
 */
export const openApi: OpenApi.OpenAPISpec = OpenApi.fromApi(RoutingApi)
