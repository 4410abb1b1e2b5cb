/**
 * The routing API's problem documents, one schema per problem code, as `RoutingApi` declares and re-exports them.
 *
 * @internal
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"
import * as Problem from "../../Problem.js"
import * as Route from "../../Route.js"
import { pascal } from "./openApi.js"

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
 * @since 0.4.0
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
 * `400`: a restore's body or revision is refused.
 *
 * @since 0.4.0
 */
export const InvalidRestoreProblem = problem("invalid_restore", { errors: FieldErrors })
/**
 * `400`: a change set's body is not a batch.
 *
 * @since 0.5.0
 */
export const InvalidBatchProblem = problem("invalid_batch", { errors: FieldErrors })
/**
 * `400`: a follower's name or report breaks the fleet's rules.
 *
 * @since 0.4.0
 */
export const InvalidReportProblem = problem("invalid_report", { errors: FieldErrors })
/**
 * `404`: a report names no stream its token has open here.
 *
 * @since 0.4.0
 */
export const StreamNotFoundProblem = problem("stream_not_found")
/**
 * `429`: a follower reports more often than the fleet takes.
 *
 * @since 0.4.0
 */
export const TooManyReportsProblem = problem("too_many_reports")
/**
 * `409`: a follower of that name is connected to this process already.
 *
 * @since 0.5.0
 */
export const FollowerNameTakenProblem = problem("follower_name_taken")
/**
 * `429`: a join or report would take the fleet past its bound per process or per principal.
 *
 * @since 0.5.0
 */
export const TooManyFollowersProblem = problem("too_many_followers")

/** The schema of each problem the routing API answers, by code. */
export const PROBLEMS = {
  invalid_request: InvalidRequestProblem,
  malformed_json: MalformedJsonProblem,
  invalid_route: InvalidRouteProblem,
  invalid_query: InvalidQueryProblem,
  unauthenticated: UnauthenticatedProblem,
  invalid_token: InvalidTokenProblem,
  insufficient_scope: InsufficientScopeProblem,
  route_not_found: RouteNotFoundProblem,
  not_found: NotFoundProblem,
  method_not_allowed: MethodNotAllowedProblem,
  request_timeout: RequestTimeoutProblem,
  route_conflict: RouteConflictProblem,
  precondition_failed: PreconditionFailedProblem,
  payload_too_large: PayloadTooLargeProblem,
  unsupported_media_type: UnsupportedMediaTypeProblem,
  internal_error: InternalErrorProblem,
  store_unavailable: StoreUnavailableProblem,
  authenticator_unavailable: AuthenticatorUnavailableProblem,
  invalid_idempotency_key: InvalidIdempotencyKeyProblem,
  idempotency_key_in_use: IdempotencyKeyInUseProblem,
  idempotency_key_reused: IdempotencyKeyReusedProblem,
  too_many_idempotency_keys: TooManyIdempotencyKeysProblem,
  too_many_methods: TooManyMethodsProblem,
  invalid_restore: InvalidRestoreProblem,
  invalid_batch: InvalidBatchProblem,
  invalid_report: InvalidReportProblem,
  stream_not_found: StreamNotFoundProblem,
  too_many_reports: TooManyReportsProblem,
  follower_name_taken: FollowerNameTakenProblem,
  too_many_followers: TooManyFollowersProblem
} as const satisfies Partial<Record<Problem.Code, Schema.Schema.Any>>
