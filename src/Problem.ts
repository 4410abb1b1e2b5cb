/**
 * RFC 9457 problem details: the body of every error the routing API answers, and the table of its codes.
 *
 * @since 0.1.0
 */
import { Record } from "effect"
import * as Limits from "./internal/limits.js"
import { MAX_METHODS } from "./internal/store/rules.js"

// Every problem, once: its code, its status and what it means. `codes` and `descriptions` are its two columns.
const problems = {
  invalid_request: {
    status: 400,
    description: "The Authorization header names the Bearer scheme but its credential is empty or malformed."
  },
  malformed_json: {
    status: 400,
    description: "The body is not valid JSON (or is empty, or ended early)."
  },
  invalid_route: {
    status: 400,
    description: "The body is JSON but breaks the route rules; `errors` lists every problem, one entry each."
  },
  invalid_query: {
    status: 400,
    description: "The listing query breaks its rules; `errors` lists every problem, `path` naming the parameter."
  },
  invalid_restore: {
    status: 400,
    description:
      "The restore's body is not exactly {\"revision\": <positive integer>}, or names a revision not in this route's log, or one that deleted it; `errors` says which."
  },
  invalid_batch: {
    status: 400,
    description:
      "The body of POST /v1/routing/batch is not a batch (not an object, no operations, an empty list or one over 5,000, an unknown op, a route id twice); `errors` names each place."
  },
  invalid_report: {
    status: 400,
    description:
      "A follower's name (the Follower-Name header of the change stream) or its report (POST /v1/routing/followers) breaks the rules of docs/scaling-out.md, or reports a revision above any this process issued; `errors` names each field."
  },
  malformed_path: {
    status: 400,
    description: "The router could not read the request path (a bad percent-escape, or one not decoding to UTF-8)."
  },
  invalid_idempotency_key: {
    status: 400,
    description:
      "The Idempotency-Key header is not one key of printable ASCII characters, quoted (or a bare token), within the length limit."
  },
  unauthenticated: {
    status: 401,
    description: "No Authorization header, or a scheme other than Bearer."
  },
  invalid_token: {
    status: 401,
    description: "The bearer token is not accepted (unknown, expired or revoked)."
  },
  insufficient_scope: {
    status: 403,
    description:
      "The token lacks the scope the request needs (routes:read to get and list, routes:write to create, update and " +
      "delete; routes:write:<prefix> for routes under that path prefix only); `WWW-Authenticate` names the scope."
  },
  route_not_found: {
    status: 404,
    description: "No route has that id (including ids that could never exist)."
  },
  stream_not_found: {
    status: 404,
    description:
      "A follower's report names no change stream its token has open at this process (it closed, or is another's): report on the stream now open."
  },
  not_found: {
    status: 404,
    description:
      "Nothing is served at that path (answered only by an adapter or router with no host to fall back on, " +
      "or for the change stream by an API built without a route table)."
  },
  method_not_allowed: {
    status: 405,
    description: "The path is served, but not with that method; `Allow` lists the methods that are."
  },
  request_timeout: {
    status: 408,
    description: `The body did not arrive in full within the body timeout (${
      Limits.describeMillis(Limits.DEFAULT_BODY_TIMEOUT_MILLIS)
    } by default).`
  },
  route_conflict: {
    status: 409,
    description: "A stored route has the same method, shape and conditions; `conflictingRouteId` names it."
  },
  follower_name_taken: {
    status: 409,
    description:
      "A follower of that name (Follower-Name) is connected to this process already; the stream was not opened. Give each follower its own name, or open the stream without one to follow unlisted."
  },
  idempotency_key_in_use: {
    status: 409,
    description:
      "A create or batch with the same Idempotency-Key is still being answered; nothing was written. Retry with the key once it has finished."
  },
  too_many_methods: {
    status: 409,
    description: `The registry already stores ${MAX_METHODS} distinct methods (the most it holds, so that ` +
      "the Allow header of a 405 stays small) and the route would add another; nothing was written. Use a stored method, " +
      "or delete the routes of one no longer needed."
  },
  precondition_failed: {
    status: 412,
    description: "`If-Match` names no current tag of the route; nothing changed."
  },
  payload_too_large: {
    status: 413,
    description: `The body is larger than the configured limit (${
      Limits.describeBytes(Limits.DEFAULT_MAX_BODY_BYTES)
    } by default).`
  },
  unsupported_media_type: {
    status: 415,
    description:
      "The body is not sent as `application/json` (PATCH also takes `application/merge-patch+json`; a charset other than UTF-8 is refused)."
  },
  idempotency_key_reused: {
    status: 422,
    description:
      "The Idempotency-Key was first used with a different body; nothing was written. Repeat the first body, or use a new key."
  },
  too_many_idempotency_keys: {
    status: 429,
    description: `The client already holds as many Idempotency-Keys as it may (${
      Limits.DEFAULT_IDEMPOTENCY_KEYS_PER_PRINCIPAL.toLocaleString("en-US")
    } keys or ${
      Limits.describeBytes(Limits.DEFAULT_IDEMPOTENCY_KEY_BYTES_PER_PRINCIPAL)
    } by default); nothing was written. Send the create or batch without a key, or retry after \`Retry-After\` seconds, when its oldest key expires.`
  },
  too_many_reports: {
    status: 429,
    description:
      "A follower sent more reports on one stream than the fleet takes per second; this one was not taken. Send the next after `Retry-After` seconds."
  },
  too_many_followers: {
    status: 429,
    description: `The fleet holds as many followers, relayed ones included, as this process lists (${
      Limits.FLEET_FOLLOWERS_PER_PROCESS.toLocaleString("en-US")
    }) or as one principal may report (${
      Limits.FLEET_FOLLOWERS_PER_PRINCIPAL.toLocaleString("en-US")
    }); the join or report was not taken. Follow unlisted, or retry after \`Retry-After\` seconds.`
  },
  too_many_streams: {
    status: 429,
    description: `The client already holds as many change streams open as one principal may (${
      Limits.DEFAULT_CHANGES_STREAMS_PER_PRINCIPAL.toLocaleString("en-US")
    } by default); none was opened. Close one, or retry after \`Retry-After\` seconds.`
  },
  internal_error: {
    status: 500,
    description: "Something unexpected failed; the cause is logged, never sent."
  },
  handler_unavailable: {
    status: 503,
    description:
      "The route names a handler or middleware this process has not registered (another process may have it)."
  },
  route_disabled: {
    status: 503,
    description: "The route that serves this request is disabled (`enabled: false`): no function ran. Retry after " +
      "`Retry-After` seconds, or enable the route."
  },
  route_misconfigured: {
    status: 503,
    description: "The route that serves this request gives a middleware a config the middleware's schema refuses, or " +
      "a config to a middleware registered without one: no function ran. Logged once per route and version."
  },
  authenticator_unavailable: {
    status: 503,
    description: "The token cannot be checked now (an identity provider's key set cannot be fetched); " +
      "nothing was done. Retry after `Retry-After` seconds."
  },
  store_unavailable: {
    status: 503,
    description: "The store is unreachable or timed out; nothing was written. Retry after `Retry-After` seconds."
  }
} as const

/**
 * Every `code` the API can answer with, and its HTTP status. The codes are stable: clients may branch on them.
 * `not_found` is answered only by an adapter (or the router) that has no host to hand a request back to.
 *
 * @since 0.1.0
 */
export const codes = Record.map(problems, (problem) => problem.status) as {
  readonly [C in keyof typeof problems]: (typeof problems)[C]["status"]
}

/**
 * @since 0.1.0
 */
export type Code = keyof typeof codes

/**
 * What each code means, for the OpenAPI document and for people.
 *
 * @since 0.1.0
 */
export const descriptions: Readonly<Record<Code, string>> = Record.map(problems, (problem) => problem.description)

/**
 * The reason phrase of each status the API answers with; with `type: "about:blank"` the title is the phrase.
 *
 * @since 0.1.0
 */
export const titles: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  412: "Precondition Failed",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable"
}

/**
 * @since 0.1.0
 */
export const CONTENT_TYPE = "application/problem+json"

/**
 * A problem document. `errors` comes with `invalid_route` and `invalid_query`, `conflictingRouteId` with
 * `route_conflict`.
 *
 * @since 0.1.0
 */
export interface Problem {
  readonly type: string
  readonly title: string
  readonly status: number
  readonly detail: string
  readonly code: Code
  readonly errors?: ReadonlyArray<{ readonly path: string; readonly message: string }>
  readonly conflictingRouteId?: string
}

/**
 * Builds the problem document for `code`.
 *
 * @since 0.1.0
 */
export const make = (
  code: Code,
  detail: string,
  extensions?: Pick<Problem, "errors" | "conflictingRouteId">
): Problem => {
  const status = codes[code]
  return { type: "about:blank", title: titles[status]!, status, detail, code, ...extensions }
}
