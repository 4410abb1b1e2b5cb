/**
 * Every answer of the routing API, built in one place: the fixed ones once, the others from what they report.
 *
 * @internal
 */
import { Effect, Exit } from "effect"
import * as Problem from "../../Problem.js"
import type { FieldIssue } from "../../Route.js"
import type { TooManyIdempotencyKeys } from "../../RouteRepository.js"
import { neededScope } from "../auth/scopes.js"
import { MAX_ISSUES } from "../route/validate.js"
import * as When from "../route/when.js"
import { IDEMPOTENCY_KEY_OVERHEAD_BYTES } from "../store/rules.js"
import { CHANGES, MATCH } from "./endpoints.js"
import { COLLECTION, type Response } from "./exchange.js"

export const JSON_TYPE = "application/json"

/** The Bearer challenge of every `WWW-Authenticate` header (RFC 6750 §3). */
export const REALM = "Bearer realm=\"routing\""

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/**
 * A problem document answer, the one builder of every problem the routing API and the routers answer; `headers` are
 * added to its content type.
 */
export const problem = (
  code: Problem.Code,
  detail: string,
  headers?: Record<string, string>,
  extensions?: Pick<Problem.Problem, "errors" | "conflictingRouteId">
): Response => ({
  status: Problem.codes[code],
  headers: { "content-type": Problem.CONTENT_TYPE, ...headers },
  body: JSON.stringify(Problem.make(code, detail, extensions)),
  problem: code
})

/** A JSON answer. */
export const json = (status: number, body: string, headers?: Record<string, string>): Response => ({
  status,
  headers: { "content-type": JSON_TYPE, ...headers },
  body
})

/** An answer the core keeps and gives again (a route's 200, kept per revision): an adapter may keep its head too. */
export class Reused implements Response {
  /** The head as the Node adapter writes it, built by it on first use. */
  nodeHead: Array<string> | undefined = undefined
  constructor(readonly status: number, readonly headers: Readonly<Record<string, string>>, readonly body: string) {}
}

export const isReused = (response: Response): response is Reused => response instanceof Reused

/** `true` for the statuses answered without a body, and so without `Content-Length` (RFC 9110 §8.6). */
/**
 * A request refused before it reached the store, carrying its answer: the failure the operations' steps end with when
 * the contract refuses the request. A class of its own, so nothing a service fails with can be mistaken for an answer.
 */
export class Refusal {
  readonly _tag = "Refusal"
  constructor(readonly response: Response) {}
}

/** Refuses the request with `response`: an `Exit`, so a refusal decided at once needs no fiber (`runner.ts`). */
export const refuse = (response: Response): Effect.Effect<never, Refusal> => Exit.fail(new Refusal(response))

export const hasNoBody = (status: number): boolean => status === 204 || status === 304

/** An answer without a body (204, 304). */
export const empty = (status: number, headers: Record<string, string> = {}): Response => ({ status, headers, body: "" })

// --- credentials ---------------------------------------------------------------------------------------------------

const challenge = (code: "invalid_request" | "invalid_token", detail: string) =>
  problem(code, detail, { "www-authenticate": `${REALM}, error="${code}"` })

export const UNAUTHENTICATED = problem(
  "unauthenticated",
  "This request needs a bearer token: send the header \"Authorization: Bearer <token>\".",
  { "www-authenticate": REALM }
)

export const EMPTY_CREDENTIAL = challenge(
  "invalid_request",
  "The Authorization header names the Bearer scheme but carries no token: send \"Authorization: Bearer <token>\"."
)

export const MALFORMED_CREDENTIAL = challenge(
  "invalid_request",
  "The bearer token is malformed: a token is letters, digits and - . _ ~ + / optionally followed by \"=\" padding."
)

export const SEVERAL_CREDENTIALS = challenge(
  "invalid_request",
  "The request carries more than one Authorization credential: send exactly one \"Authorization: Bearer <token>\"."
)

export const INVALID_TOKEN = challenge(
  "invalid_token",
  "The bearer token is not accepted: check that it is a configured token and has not expired or been revoked."
)

const insufficientScope = (scope: string, action: string) =>
  problem(
    "insufficient_scope",
    `This token lacks the ${scope} scope needed to ${action}: use a token that has it.`,
    { "www-authenticate": `${REALM}, error="insufficient_scope", scope="${scope}"` }
  )

export const READ_SCOPE = insufficientScope("routes:read", "read routes")

export const REPORT_SCOPE = insufficientScope("fleet:report", "report to the fleet")

export const WRITE_SCOPE = insufficientScope("routes:write", "create, update or delete routes")

// --- owners of path prefixes (docs/authentication.md) ---------------------------------------------------------------------------

/** A write outside every prefix the token owns: the challenge names the narrowest scope that would allow it. */
export const outsidePrefixes = (path: string) => {
  const scope = neededScope(path)
  return problem(
    "insufficient_scope",
    `This token may write only routes under the path prefixes of its routes:write:<prefix> scopes, and ${path} is ` +
      `under none of them, so nothing was changed: use a token with the scope ${scope}${
        scope === "routes:write" ? "" : " or routes:write"
      }.`,
    { "www-authenticate": `${REALM}, error="insufficient_scope", scope="${scope}"` }
  )
}

// --- paths and methods ---------------------------------------------------------------------------------------------

export const methodNotAllowed = (method: string, path: string, allow: string) =>
  problem("method_not_allowed", `${method} is not served on ${path}: use ${allow}.`, { allow })

/** What a follower's routing API serves on every path (`RouteRepository.readOnly`). */
export const READ_ONLY_METHODS = "GET"

/** A write sent to a follower, whose routes come from the registry it follows. */
export const READ_ONLY = problem(
  "method_not_allowed",
  "This process follows another registry and serves its routes read-only: send creates, updates and deletes to " +
    "the registry it follows.",
  { allow: READ_ONLY_METHODS }
)

export const NOT_FOUND = problem(
  "not_found",
  `Nothing is served at this path: the routing API lives under ${COLLECTION}.`
)

export const INTERNAL_ERROR = problem(
  "internal_error",
  "An unexpected error occurred. It has been logged; please retry later."
)

// --- bodies and queries --------------------------------------------------------------------------------------------

export const unsupportedMediaType = (contentType: string | undefined, accepted: string) =>
  problem(
    "unsupported_media_type",
    `Send the body as JSON with "Content-Type: ${accepted}" (got ${
      contentType === undefined ? "no Content-Type" : JSON.stringify(contentType)
    }).`
  )

// Connection: close, because the rest of the body is left unread.
export const tooLarge = (maxBodyBytes: number) =>
  problem(
    "payload_too_large",
    `The body is larger than the limit of ${maxBodyBytes} bytes: send a smaller route definition.`,
    { connection: "close" }
  )

export const timedOut = (bodyTimeoutMillis: number) =>
  problem(
    "request_timeout",
    `The body did not arrive within ${bodyTimeoutMillis} ms: send it in full, without pauses.`,
    { connection: "close" }
  )

export const INCOMPLETE = problem(
  "malformed_json",
  "The body ended before it was complete: send the whole JSON object."
)

export const malformedJson = (detail: string) => problem("malformed_json", detail)

export const BODY_CONSUMED = problem(
  "internal_error",
  "The server is misconfigured: another middleware read the request body before the routing API could (a body " +
    "parser such as express.json() mounted before it). Its operator must mount the routing API before any body " +
    "parser; the request changed nothing."
)

// How many problems a list names; a full list may not be all of them (the validators stop at MAX_ISSUES).
const countOf = (errors: ReadonlyArray<FieldIssue>, word: string) =>
  errors.length >= MAX_ISSUES
    ? `at least ${plural(MAX_ISSUES, word)}; the first ${MAX_ISSUES} are listed in "errors"`
    : `${plural(errors.length, word)}: see "errors" for each one`

export const invalidRoute = (errors: ReadonlyArray<FieldIssue>) =>
  problem("invalid_route", `The route definition breaks ${countOf(errors, "rule")}.`, undefined, { errors })

export const invalidQuery = (errors: ReadonlyArray<FieldIssue>) =>
  problem("invalid_query", `The listing query has ${countOf(errors, "problem")}.`, undefined, { errors })

export const invalidChangesQuery = (errors: ReadonlyArray<FieldIssue>) =>
  problem("invalid_query", `The change stream's query has ${countOf(errors, "problem")}.`, undefined, { errors })

// --- the change stream ---------------------------------------------------------------------------------------------

export const NO_CHANGE_HISTORY = problem(
  "not_found",
  `This process keeps no change history, so it does not serve ${CHANGES}: its operator must build the routing API ` +
    "over a route table (RouteTable.layer, or a follower's table), which records the changes the stream sends."
)

// How long a client refused for holding too many streams waits: long enough for a reconnecting fleet to settle.
const TOO_MANY_STREAMS_RETRY_SECONDS = 10

export const tooManyStreams = (limit: number) =>
  problem(
    "too_many_streams",
    `This client already holds ${plural(limit, "change stream")} open, the most one principal may ` +
      "(changesStreamsPerPrincipal), so no stream was opened: close one it no longer reads, or retry after " +
      `${plural(TOO_MANY_STREAMS_RETRY_SECONDS, "second")}.`,
    { "retry-after": String(TOO_MANY_STREAMS_RETRY_SECONDS) }
  )

// --- which route serves a request ---------------------------------------------------------------------------------

export const NO_TABLE = problem(
  "not_found",
  `This process keeps no route table, so it does not serve ${MATCH}: its operator must build the routing API over ` +
    "a route table (RouteTable.layer, or a follower's table), the one its router reads."
)

export const invalidMatchQuery = (errors: ReadonlyArray<FieldIssue>) =>
  problem("invalid_query", `The match query has ${countOf(errors, "problem")}.`, undefined, { errors })

// --- the store -----------------------------------------------------------------------------------------------------

export const routeNotFound = (id: string) => problem("route_not_found", `No route has the id ${JSON.stringify(id)}.`)

/**
 * `409 route_conflict`. With conditions, the detail names them and says that they compare as a set, since two
 * routes whose `when` is written differently (header names' case, the lists' order) may still have the same.
 */
export const conflict = (method: string, path: string, conflictingRouteId: string, when?: When.When) =>
  problem(
    "route_conflict",
    when === undefined
      ? `${method} ${path} has the same method and shape as route ${conflictingRouteId}: a router could not tell them apart.`
      : `${method} ${path} with the conditions ${When.keyOf(when)} has the same method, shape and conditions ` +
        `as route ${conflictingRouteId}: a router could not tell them apart. Conditions compare as a set (header ` +
        `names in any case, the lists in any order), so a when written differently may still be the same: change ` +
        `this route's when, method or path, or update route ${conflictingRouteId} instead.`,
    undefined,
    { conflictingRouteId }
  )

export const preconditionFailed = (id: string) =>
  problem(
    "precondition_failed",
    `Route ${id} has changed since the version If-Match names, and nothing was changed: get it again and retry with its current ETag.`
  )

export const tooManyMethods = (method: string, limit: number) =>
  problem(
    "too_many_methods",
    `The registry already stores ${limit} distinct methods, the most it holds, and ${method} is none of them, so ` +
      "nothing was written (every method a path serves goes into the Allow header of a 405, which must stay small): " +
      `use a method already stored, or delete the routes of a method no longer needed to free its place.`
  )

/**
 * Whole seconds until `millis` have passed, at least 1 (a `Retry-After` of 0 would invite a retry at once), and a
 * number a header can carry even for a key that never expires.
 */
const secondsFor = (millis: number) => Math.max(1, Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(millis / 1000)))

// Which bound the new key would pass: the number of keys, else the bytes they count.
const boundPassed = ({ bytes, keys, maxBytes, maxKeys }: TooManyIdempotencyKeys) =>
  keys >= maxKeys
    ? `This client holds ${plural(keys, "Idempotency-Key")} and may hold at most ${maxKeys} ` +
      "(idempotencyKeysPerPrincipal)"
    : `This client holds ${plural(keys, "Idempotency-Key")} counting ${plural(bytes, "byte")}, and this key would ` +
      `take them past the most they may count (idempotencyKeyBytesPerPrincipal: ${plural(maxBytes, "byte")}, each ` +
      `key its length plus ${IDEMPOTENCY_KEY_OVERHEAD_BYTES})`

export const tooManyIdempotencyKeys = (refused: TooManyIdempotencyKeys) => {
  const seconds = secondsFor(refused.retryAfterMillis)
  return problem(
    "too_many_idempotency_keys",
    `${boundPassed(refused)}, so nothing was created: send the create without an Idempotency-Key, or retry after ${
      plural(seconds, "second")
    }, when its oldest key expires.`,
    { "retry-after": String(seconds) }
  )
}

export const authenticatorUnavailable = (retryAfterMillis: number) => {
  const seconds = secondsFor(retryAfterMillis)
  return problem(
    "authenticator_unavailable",
    `The token cannot be checked right now (the identity provider's keys cannot be fetched) and nothing was done: ` +
      `retry after ${plural(seconds, "second")}.`,
    { "retry-after": String(seconds) }
  )
}

export const unavailable = (retryAfterSeconds: number) =>
  problem(
    "store_unavailable",
    `The route store is unavailable right now and nothing was written: retry after ${
      plural(retryAfterSeconds, "second")
    }.`,
    { "retry-after": String(retryAfterSeconds) }
  )
