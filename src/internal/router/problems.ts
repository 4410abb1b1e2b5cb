/**
 * What the routers answer by themselves, built by the routing API's one problem builder: the Node and the Effect
 * forms answer alike.
 *
 * @internal
 */
import * as Answers from "../http/answers.js"
import type { Response } from "../http/exchange.js"
import * as Limits from "../limits.js"

/** An answer: status, headers (lowercase names) and a JSON body. */
export type Answer = Response

export const notFound: Answer = Answers.problem(
  "not_found",
  "No route serves this path: check the path, or create a route for it."
)

/** The answer to anything unexpected: the routing API's own. */
export const internalError: Answer = Answers.INTERNAL_ERROR

export const methodNotAllowed = (allow: ReadonlyArray<string>): Answer =>
  Answers.problem("method_not_allowed", `No route serves this path with this method: use ${allow.join(", ")}.`, {
    allow: allow.join(", ")
  })

export const malformedPath = (reason: string): Answer =>
  Answers.problem(
    "malformed_path",
    `The request path is malformed (${reason}): percent-encode it as RFC 3986 says.`
  )

export const handlerUnavailable = (name: string): Answer =>
  Answers.problem(
    "handler_unavailable",
    `This route needs the function ${JSON.stringify(name)}, which this process has not registered: another process ` +
      "of this host may serve it, so retry; if none does, register a function under that name, or change the " +
      "route to name a registered one.",
    { "retry-after": String(Limits.DEFAULT_RETRY_AFTER_SECONDS) }
  )

/** How long a client of a disabled route is asked to wait (docs/router.md: disabled routes and splits). */
export const ROUTE_DISABLED_RETRY_AFTER_SECONDS = 60

/** A disabled route's answer: it still wins matching, so traffic never falls through to a broader route. */
export const routeDisabled: Answer = Answers.problem(
  "route_disabled",
  "The route that serves this path is disabled: no function ran. Retry later, or enable the route.",
  { "retry-after": String(ROUTE_DISABLED_RETRY_AFTER_SECONDS) }
)

/**
 * A route whose middleware configs do not decode: no function ran. The detail names no config: a route's config is the
 * operator's, not the caller's; the log says what is wrong.
 */
export const routeMisconfigured: Answer = Answers.problem(
  "route_misconfigured",
  "The route that serves this path has a middleware config this process cannot use: no function ran. The host's " +
    "log names the problem; fix the route's config, or the function's config schema.",
  { "retry-after": String(Limits.DEFAULT_RETRY_AFTER_SECONDS) }
)

/** The routing API's own 408 (its text, and `Connection: close`): a routed body that did not arrive in time. */
export const requestTimeout: (bodyTimeoutMillis: number) => Answer = Answers.timedOut
