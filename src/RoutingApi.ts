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
import * as Idempotency from "./internal/http/idempotency.js"
import * as Limits from "./internal/limits.js"
import * as Problem from "./Problem.js"
import * as Route from "./Route.js"

const pascal = (code: string) => code.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase())

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
 * @since 0.1.0
 */
export const InvalidRequestProblem = problem("invalid_request")
/**
 * @since 0.1.0
 */
export const MalformedJsonProblem = problem("malformed_json")
/**
 * @since 0.1.0
 */
export const InvalidRouteProblem = problem("invalid_route", { errors: FieldErrors })
/**
 * @since 0.2.0
 */
export const InvalidQueryProblem = problem("invalid_query", { errors: FieldErrors })
/**
 * @since 0.1.0
 */
export const UnauthenticatedProblem = problem("unauthenticated")
/**
 * @since 0.1.0
 */
export const InvalidTokenProblem = problem("invalid_token")
/**
 * @since 0.1.0
 */
export const InsufficientScopeProblem = problem("insufficient_scope")
/**
 * @since 0.1.0
 */
export const RouteNotFoundProblem = problem("route_not_found")
/**
 * @since 0.1.0
 */
export const MethodNotAllowedProblem = problem("method_not_allowed")
/**
 * @since 0.1.0
 */
export const RequestTimeoutProblem = problem("request_timeout")
/**
 * @since 0.1.0
 */
export const RouteConflictProblem = problem("route_conflict", { conflictingRouteId: Route.RouteId })
/**
 * @since 0.2.0
 */
export const PreconditionFailedProblem = problem("precondition_failed")
/**
 * @since 0.1.0
 */
export const PayloadTooLargeProblem = problem("payload_too_large")
/**
 * @since 0.1.0
 */
export const UnsupportedMediaTypeProblem = problem("unsupported_media_type")
/**
 * @since 0.1.0
 */
export const InternalErrorProblem = problem("internal_error")
/**
 * @since 0.1.0
 */
export const StoreUnavailableProblem = problem("store_unavailable")
/**
 * @since 0.3.0
 */
export const InvalidIdempotencyKeyProblem = problem("invalid_idempotency_key")
/**
 * @since 0.3.0
 */
export const IdempotencyKeyInUseProblem = problem("idempotency_key_in_use")
/**
 * @since 0.3.0
 */
export const IdempotencyKeyReusedProblem = problem("idempotency_key_reused")
/**
 * @since 0.3.0
 */
export const TooManyIdempotencyKeysProblem = problem("too_many_idempotency_keys")
/**
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
    HttpApiEndpoint.get("list", "/v1/routing")
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
    HttpApiEndpoint.post("create", "/v1/routing")
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
        "Needs the routes:write scope. Answers 201 with the stored route, its Location and its ETag. " +
          "With an Idempotency-Key, a retry gets the first answer again instead of creating twice."
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/routing/:id")
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
    HttpApiEndpoint.patch("update", "/v1/routing/:id")
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
        "Needs the routes:write scope. The fields given replace the stored ones; id and createdAt never change. " +
          "Answers the whole updated route with its new ETag; a patch that changes nothing keeps the ETag."
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/v1/routing/:id")
      .setPath(RouteIdParam)
      .setHeaders(IfMatch)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(RouteNotFoundProblem)
      .addError(PreconditionFailedProblem)
      .annotate(OpenApi.Summary, "Delete a route")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope. Answers 204 without a body; its method and shape are free again at once."
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
  .middleware(BearerAuth)
  .annotate(OpenApi.Description, "Route definitions: create, read, list, update and delete them.")
{}

// ---------------------------------------------------------------------------------------------------------------
// The document: what the HttpApi model cannot express
// ---------------------------------------------------------------------------------------------------------------

interface Header {
  readonly description: string
  readonly required?: boolean
  readonly schema: Record<string, unknown>
}

const string = { type: "string" }

const ETag: Header = {
  description: "The route's version, a strong entity tag; it changes whenever the route changes, and only then.",
  required: true,
  schema: string
}

// Success answers by operation: their description and headers.
const successes: Record<string, Record<string, { description: string; headers?: Record<string, Header> }>> = {
  "routing.list": {
    "200": {
      description: "A page of routes.",
      headers: {
        Link: {
          description: "Present exactly when nextCursor is not null: the next page (RFC 8288), with the same " +
            "filters and limit, as a relative reference with rel=\"next\".",
          schema: string
        }
      }
    }
  },
  "routing.create": {
    "201": {
      description: "The stored route.",
      headers: {
        Location: {
          description: "/v1/routing/{id} of the created route.",
          required: true,
          schema: { type: "string", format: "uri-reference" }
        },
        ETag,
        [Idempotency.REPLAYED_HEADER]: {
          description: "true when this is the first answer to the request's Idempotency-Key, given again.",
          schema: { type: "string", enum: ["true"] }
        }
      }
    }
  },
  "routing.get": {
    "200": { description: "The stored route.", headers: { ETag } },
    "304": { description: "If-None-Match names the route's current ETag: no body.", headers: { ETag } }
  },
  "routing.update": { "200": { description: "The updated route.", headers: { ETag } } },
  "routing.delete": { "204": { description: "The route is deleted: no body." } }
}

// The request header of a create (the HttpApi model would make the typed client's callers pass it).
const idempotencyKey = {
  name: Idempotency.HEADER,
  in: "header",
  required: false,
  description: "Makes the create safe to retry (draft-ietf-httpapi-idempotency-key-header): a key of 1 to " +
    `${Idempotency.MAX_KEY_LENGTH} printable ASCII characters as a Structured Field string, such as ` +
    `${Idempotency.EXAMPLE} (a bare token is accepted too). The first answer, 201 or 409 route_conflict, is ` +
    `remembered for the principal for ${
      Limits.DEFAULT_IDEMPOTENCY_KEY_EXPIRY_SECONDS / 3600
    } hours by default: the same key ` +
    "with the same route gets it again, marked Idempotency-Replayed: true; with another route the answer is 422 " +
    "idempotency_key_reused, and while the first request is running 409 idempotency_key_in_use. A client holds at " +
    `most ${Limits.DEFAULT_IDEMPOTENCY_KEYS_PER_PRINCIPAL.toLocaleString("en-US")} keys (${
      Limits.describeBytes(Limits.DEFAULT_IDEMPOTENCY_KEY_BYTES_PER_PRINCIPAL)
    }) at once by default: a new key past that is 429 too_many_idempotency_keys, with Retry-After.`,
  schema: { type: "string", minLength: 1, maxLength: 2 * Idempotency.MAX_KEY_LENGTH + 2 },
  example: Idempotency.EXAMPLE
}

// Error answers by status: the headers they carry (the Allow of a 405 is added per path).
const errorHeaders: Record<string, Record<string, Header>> = {
  "400": {
    "WWW-Authenticate": {
      description: "With invalid_request only: Bearer realm=\"routing\", error=\"invalid_request\".",
      schema: string
    }
  },
  "401": {
    "WWW-Authenticate": {
      description: "Bearer realm=\"routing\", with error=\"invalid_token\" for invalid_token.",
      required: true,
      schema: string
    }
  },
  "403": {
    "WWW-Authenticate": {
      description: "Bearer realm=\"routing\", error=\"insufficient_scope\", with the scope needed.",
      required: true,
      schema: string
    }
  },
  "408": { Connection: { description: "close: the rest of the body is not read.", required: true, schema: string } },
  "413": { Connection: { description: "close: the rest of the body is not read.", required: true, schema: string } },
  "429": {
    "Retry-After": {
      description: "Seconds until the client's oldest Idempotency-Key expires, freeing a place for a new one.",
      required: true,
      schema: { type: "integer", minimum: 1 }
    }
  },
  "503": {
    "Retry-After": {
      description: "Seconds to wait before retrying.",
      required: true,
      schema: { type: "integer", minimum: 0 }
    }
  }
}

const codeOf = (ref: string) =>
  (Object.keys(Problem.codes) as Array<Problem.Code>).find((code) => ref.endsWith(`/${pascal(code)}Problem`))

// A problem response: its codes, one line each, under application/problem+json only (the model falls back to
// application/json for unions, and lists the stock HttpApiDecodeError, which this API never sends).
const problemResponse = (response: Record<string, any>, status: string, allow: string) => {
  const schema = Object.values<Record<string, any>>(response.content ?? {})[0]?.schema ?? {}
  const refs: Array<string> = (schema.anyOf ?? [schema]).map((s: { $ref: string }) => s.$ref)
    .filter((ref: string) => codeOf(ref) !== undefined)
  response.content = {
    [Problem.CONTENT_TYPE]: {
      schema: refs.length === 1 ? { $ref: refs[0] } : { anyOf: refs.map(($ref) => ({ $ref })) }
    }
  }
  response.description = refs.map((ref) => `${codeOf(ref)}: ${Problem.descriptions[codeOf(ref)!]}`).join("\n")
  const headers = status === "405"
    ? {
      Allow: {
        description: "The methods served on this path.",
        required: true,
        schema: { type: "string", enum: [allow] }
      }
    }
    : errorHeaders[status]
  if (headers !== undefined) response.headers = headers
}

// Completes the generated document: license, contact and servers, each response's description and headers, and
// problem responses under application/problem+json only. A 405's Allow lists the path's operations, in the order
// the group declares them.
const transform = (spec: Record<string, any>): Record<string, any> => {
  spec.info.license = { name: "MIT", identifier: "MIT" }
  spec.info.contact = { name: "route-registry", url: "https://github.com/route-registry/route-registry" }
  spec.servers = [{ url: "/", description: "The origin of the host that mounts the API." }]
  for (const item of Object.values<Record<string, any>>(spec.paths)) {
    const allow = Object.keys(item).map((method) => method.toUpperCase()).join(", ")
    for (const operation of Object.values<Record<string, any>>(item)) {
      for (const [status, response] of Object.entries<Record<string, any>>(operation.responses)) {
        const success = successes[operation.operationId]?.[status]
        if (success !== undefined) Object.assign(response, success)
        else problemResponse(response, status, allow)
      }
      if (operation.operationId === "routing.create") operation.parameters = [idempotencyKey]
      // A patch body is also accepted as JSON Merge Patch (RFC 7396), the same schema; the client sends JSON.
      if (operation.operationId === "routing.update") {
        const content = operation.requestBody.content
        content["application/merge-patch+json"] = content["application/json"]
      }
    }
  }
  delete spec.components.schemas.HttpApiDecodeError
  delete spec.components.schemas.Issue
  delete spec.components.schemas.PropertyKey
  return spec
}

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
