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
import * as Problem from "./Problem.js"
import * as Route from "./Route.js"

const pascal = (code: string) => code.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase())

const problem = <C extends Problem.Code, F extends Schema.Struct.Fields = Record<never, never>>(code: C, fields?: F) =>
  Schema.Struct({
    type: Schema.String,
    title: Schema.String,
    status: Schema.Literal(Problem.codes[code]),
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
export const InvalidRouteProblem = problem("invalid_route", {
  errors: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
})
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
    HttpApiEndpoint.post("create", "/v1/routing")
      .setPayload(Route.CreateRoute)
      .addSuccess(Route.Route, { status: 201 })
      .addError(InvalidRequestProblem)
      .addError(MalformedJsonProblem)
      .addError(InvalidRouteProblem)
      .addError(PayloadTooLargeProblem)
      .addError(RequestTimeoutProblem)
      .addError(UnsupportedMediaTypeProblem)
      .addError(RouteConflictProblem)
      .annotate(OpenApi.Summary, "Create a route")
      .annotate(OpenApi.Description, "Needs the routes:write scope. Answers 201 with Location: /v1/routing/{id}.")
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/routing/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .addSuccess(Route.Route)
      .addError(InvalidRequestProblem)
      .addError(RouteNotFoundProblem)
      .annotate(OpenApi.Summary, "Get a route by id")
      .annotate(OpenApi.Description, "Needs the routes:read scope.")
  )
  // Errors every endpoint can answer.
  .addError(UnauthenticatedProblem)
  .addError(InvalidTokenProblem)
  .addError(InsufficientScopeProblem)
  .addError(MethodNotAllowedProblem)
  .addError(InternalErrorProblem)
  .addError(StoreUnavailableProblem)
  .middleware(BearerAuth)
{}

const header = (description: string) => ({ description, schema: { type: "string" } })

// Response headers the HttpApi model cannot express, added to the generated document.
const responseHeaders: Record<string, Record<string, ReturnType<typeof header>>> = {
  "201": { Location: header("/v1/routing/{id} of the created route") },
  "400": { "WWW-Authenticate": header("Bearer challenge, with error=\"invalid_request\" (code invalid_request only)") },
  "401": {
    "WWW-Authenticate": header("Bearer challenge: realm=\"routing\", and error=\"invalid_token\" for invalid_token")
  },
  "403": { "WWW-Authenticate": header("Bearer challenge with error=\"insufficient_scope\" and the scope needed") },
  "405": { Allow: header("The methods served on this path") },
  "408": { Connection: header("close: the rest of the body is not read") },
  "413": { Connection: header("close: the rest of the body is not read") },
  "503": { "Retry-After": header("Seconds to wait before retrying") }
}

const codeOf = (ref: string) =>
  (Object.keys(Problem.codes) as Array<Problem.Code>).find((code) => ref.endsWith(`/${pascal(code)}Problem`))

// Errors are problem documents only: drop the stock HttpApiDecodeError (this API never sends it), list them under
// application/problem+json (the model falls back to application/json for unions), describe each status by its
// codes and add the headers.
const patch = (spec: Record<string, any>): Record<string, any> => {
  for (const item of Object.values<Record<string, any>>(spec.paths ?? {})) {
    for (const operation of Object.values<Record<string, any>>(item)) {
      for (const [status, response] of Object.entries<Record<string, any>>(operation.responses ?? {})) {
        const headers = responseHeaders[status]
        if (headers !== undefined) response.headers = { ...response.headers, ...headers }
        if (Number(status) < 400) continue
        const schema = Object.values<Record<string, any>>(response.content ?? {})[0]?.schema ?? {}
        const refs: Array<string> = (schema.anyOf ?? [schema]).map((s: { $ref: string }) => s.$ref)
          .filter((ref: string) => codeOf(ref) !== undefined)
        response.content = {
          [Problem.CONTENT_TYPE]: {
            schema: refs.length === 1 ? { $ref: refs[0] } : { anyOf: refs.map(($ref) => ({ $ref })) }
          }
        }
        response.description = refs.map((ref) => `${codeOf(ref)}: ${Problem.descriptions[codeOf(ref)!]}`).join("\n")
      }
    }
  }
  delete spec.components?.schemas?.HttpApiDecodeError
  delete spec.components?.schemas?.Issue
  delete spec.components?.schemas?.PropertyKey
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
    "Stores route definitions: an HTTP method and a path pattern bound to ordered middleware names and a handler."
  )
  .annotate(OpenApi.Transform, patch)
{}

/**
 * The OpenAPI 3.1 document of the API.
 *
 * @since 0.1.0
 */
export const openApi: OpenApi.OpenAPISpec = OpenApi.fromApi(RoutingApi)
