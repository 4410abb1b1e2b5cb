/**
 * What the routers answer by themselves (CONTRACT §11), and the resolution of a route's function names: shared by
 * the Node and the Effect forms.
 *
 * @internal
 */
import * as Problem from "../../Problem.js"
import type * as Route from "../../Route.js"
import * as ApiAnswers from "../http/answers.js"
import * as Limits from "../limits.js"

/** An answer: status, headers (lowercase names) and a JSON body. */
export interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

const answer = (code: Problem.Code, detail: string, headers?: Record<string, string>): Answer => {
  return {
    status: Problem.codes[code],
    headers: { "content-type": Problem.CONTENT_TYPE, ...headers },
    body: JSON.stringify(Problem.make(code, detail))
  }
}

export const notFound: Answer = answer(
  "not_found",
  "No route serves this path: check the path, or create a route for it."
)

export const internalError: Answer = answer(
  "internal_error",
  "An unexpected error occurred. It has been logged; please retry later."
)

export const methodNotAllowed = (allow: ReadonlyArray<string>): Answer =>
  answer("method_not_allowed", `No route serves this path with this method: use ${allow.join(", ")}.`, {
    allow: allow.join(", ")
  })

export const malformedPath = (reason: string): Answer =>
  answer("malformed_path", `The request path is malformed (${reason}): percent-encode it as RFC 3986 says.`)

export const handlerUnavailable = (name: string): Answer =>
  answer(
    "handler_unavailable",
    `This route needs the function ${JSON.stringify(name)}, which this process has not registered: another process ` +
      "of this host may serve it, so retry; if none does, register a function under that name, or change the " +
      "route to name a registered one.",
    { "retry-after": String(Limits.DEFAULT_RETRY_AFTER_SECONDS) }
  )

/** The routing API's own 408 (its text, and `Connection: close`): a routed body that did not arrive in time. */
export const requestTimeout: (bodyTimeoutMillis: number) => Answer = ApiAnswers.timedOut

/**
 * The route's middleware then its handler, from the registered functions; the first name registered nowhere when
 * one is missing.
 */
export const resolveFunctions = <F>(
  route: Route.Route,
  handlers: Readonly<Record<string, F>>,
  middleware: Readonly<Record<string, F>>
): ReadonlyArray<F> | string => {
  const fns: Array<F> = []
  for (const name of route.middleware) {
    const fn = Object.prototype.hasOwnProperty.call(middleware, name) ? middleware[name] : undefined
    if (fn === undefined) return name
    fns.push(fn)
  }
  const handler = Object.prototype.hasOwnProperty.call(handlers, route.handler) ? handlers[route.handler] : undefined
  if (handler === undefined) return route.handler
  fns.push(handler)
  return fns
}
