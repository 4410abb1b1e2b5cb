/**
 * The request core of the routing API, free of any HTTP framework. It takes a minimal view of a request and
 * yields a response, implementing every rule of the contract's HTTP interface once; the adapters (`NodeListener`,
 * `WebHandler`, `RoutingHttpApp`) only translate to and from their transport.
 *
 * @since 0.1.0
 */
import type { Context } from "effect"
import { Cause, Effect, Either, Exit, Redacted } from "effect"
import * as Authenticator from "./Authenticator.js"
import * as Problem from "./Problem.js"
import * as Route from "./Route.js"
import * as RouteRepository from "./RouteRepository.js"

/**
 * Why a body could not be read in full.
 *
 * @since 0.1.0
 */
export type BodyFailure =
  /** More bytes arrived than the limit allows. */
  | "TooLarge"
  /** The client stopped sending before the body was complete. */
  | "Incomplete"
  /** The whole body did not arrive within the time allowed. */
  | "Timeout"

/**
 * What the core needs of a request.
 *
 * @since 0.1.0
 */
export interface Request {
  readonly method: string
  /** The path without the query string, as received (not decoded). */
  readonly path: string
  /** A header's value by lowercase name; `undefined` when absent. */
  readonly header: (name: string) => string | undefined
  /**
   * Reads the whole body, failing with `"TooLarge"` as soon as more than `maxBytes` have arrived, and with
   * `"Timeout"` if it is not complete within `timeoutMillis`.
   */
  readonly body: (maxBytes: number, timeoutMillis: number) => Effect.Effect<Uint8Array, BodyFailure>
}

/**
 * What the core answers. `headers` holds lowercase names; `body` is JSON text (empty for none).
 *
 * @since 0.1.0
 */
export interface Response {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * @since 0.1.0
 */
export interface Options {
  /** Largest accepted request body in bytes. Default 65,536 (64 KiB). */
  readonly maxBodyBytes?: number | undefined
  /**
   * Longest time a body may take to arrive in full, in milliseconds; a slower client is answered 408 and its
   * connection closed. Default 10,000. No store connection is held while a body is read.
   */
  readonly bodyTimeoutMillis?: number | undefined
  /** Seconds a client is told to wait (`Retry-After`) when the store is unavailable. Default 1. */
  readonly retryAfterSeconds?: number | undefined
}

/**
 * @since 0.1.0
 */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024

/**
 * @since 0.1.0
 */
export const DEFAULT_BODY_TIMEOUT_MILLIS = 10_000

/**
 * The collection path; a route lives at `${COLLECTION}/{id}`.
 *
 * @since 0.1.0
 */
export const COLLECTION = "/v1/routing"

const ITEM_PREFIX = COLLECTION + "/"

/**
 * What the core needs from its host: a store and an authenticator.
 *
 * @since 0.1.0
 */
export type Services = RouteRepository.RouteRepository | Authenticator.Authenticator

/**
 * The core bound to its services. `handle` returns `undefined`, synchronously, for a path outside `/v1/routing`,
 * so the adapter can hand the request back to the host. When the answer was decided without waiting (the services
 * answered at once) the Effect is already completed, an `Exit`, and an adapter may take its value without running a
 * fiber.
 *
 * @since 0.1.0
 */
export interface RoutingHandler {
  readonly handle: (request: Request) => Effect.Effect<Response> | undefined
}

/**
 * The `Location` of a stored route, built from its id alone.
 *
 * @since 0.1.0
 */
export const location = (id: Route.RouteId): string => ITEM_PREFIX + id

const REALM = "Bearer realm=\"routing\""
const JSON_HEADERS = { "content-type": "application/json" } as const

const problem = (
  code: Problem.Code,
  detail: string,
  headers?: Record<string, string>,
  extensions?: Pick<Problem.Problem, "errors" | "conflictingRouteId">
): Response => ({
  status: Problem.codes[code],
  headers: { "content-type": Problem.CONTENT_TYPE, ...headers },
  body: JSON.stringify(Problem.make(code, detail, extensions))
})

const challenge = (code: "invalid_request" | "invalid_token", detail: string) =>
  problem(code, detail, { "www-authenticate": `${REALM}, error="${code}"` })

const UNAUTHENTICATED = problem(
  "unauthenticated",
  "This request needs a bearer token: send the header \"Authorization: Bearer <token>\".",
  { "www-authenticate": REALM }
)
const EMPTY_CREDENTIAL = challenge(
  "invalid_request",
  "The Authorization header names the Bearer scheme but carries no token: send \"Authorization: Bearer <token>\"."
)
const MALFORMED_CREDENTIAL = challenge(
  "invalid_request",
  "The bearer token is malformed: a token is letters, digits and - . _ ~ + / optionally followed by \"=\" padding."
)
const INVALID_TOKEN = challenge(
  "invalid_token",
  "The bearer token is not accepted: check that it is a configured token and has not expired or been revoked."
)
const insufficientScope = (scope: Authenticator.Scope, action: string) =>
  problem(
    "insufficient_scope",
    `This token lacks the ${scope} scope needed to ${action}: use a token that has it.`,
    { "www-authenticate": `${REALM}, error="insufficient_scope", scope="${scope}"` }
  )
const READ_SCOPE = insufficientScope("routes:read", "read routes")
const WRITE_SCOPE = insufficientScope("routes:write", "create routes")

/**
 * The answer to anything unexpected: no cause, stack or SQL in it (the cause goes to the log).
 *
 * @since 0.1.0
 */
export const internalError: Response = problem(
  "internal_error",
  "An unexpected error occurred. It has been logged; please retry later."
)

/**
 * What an adapter with no host to fall back on answers for a path outside `/v1/routing`.
 *
 * @since 0.1.0
 */
export const notFound: Response = problem(
  "not_found",
  "Nothing is served at this path: the routing API lives under /v1/routing."
)

type Credential = Redacted.Redacted<string> | Response

const isOws = (c: number) => c === 32 || c === 9

// The header value without surrounding optional whitespace: spaces and tabs only (RFC 9110 §5.6.3), not every
// Unicode space as String.prototype.trim would, so "\u00a0Bearer …" stays unauthenticated.
const trimOws = (value: string): string => {
  let start = 0
  let end = value.length
  while (start < end && isOws(value.charCodeAt(start))) start++
  while (end > start && isOws(value.charCodeAt(end - 1))) end--
  return start === 0 && end === value.length ? value : value.slice(start, end)
}

// Reads the bearer token of an Authorization header, or the response that refuses it.
const credential = (header: string | undefined): Credential => {
  if (header === undefined) return UNAUTHENTICATED
  const value = trimOws(header)
  const space = value.indexOf(" ")
  const scheme = space === -1 ? value : value.slice(0, space)
  // The scheme name is case-insensitive (RFC 9110 §11.1).
  if (scheme.length !== 6 || scheme.toLowerCase() !== "bearer") return UNAUTHENTICATED
  // Spaces only between scheme and token (RFC 9110 §11.4: 1*SP).
  let start = space + 1
  while (space !== -1 && value.charCodeAt(start) === 32) start++
  const token = space === -1 ? "" : value.slice(start)
  if (token === "") return EMPTY_CREDENTIAL
  if (!Authenticator.isWellFormedToken(token)) return MALFORMED_CREDENTIAL
  return Redacted.make(token)
}

const methodNotAllowed = (method: string, path: string, allow: string) =>
  problem(
    "method_not_allowed",
    `${method} is not served on ${path}: use ${allow}.`,
    { allow }
  )

// `application/json`, with any parameters; a charset other than UTF-8 is refused since the body is read as UTF-8.
const isJson = (contentType: string | undefined): boolean => {
  if (contentType === undefined) return false
  const semicolon = contentType.indexOf(";")
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase()
  if (type !== "application/json") return false
  if (semicolon === -1) return true
  const charset = /(?:^|;)\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType.slice(semicolon))
  return charset === null || /^utf-?8$/i.test(charset[1]!)
}

const decoder = new TextDecoder("utf-8", { fatal: true })

const parseJson = (bytes: Uint8Array): Either.Either<unknown, string> => {
  if (bytes.length === 0) return Either.left("The body is empty: send a JSON object describing the route.")
  try {
    return Either.right(JSON.parse(decoder.decode(bytes)))
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : "the body is not UTF-8 text"
    return Either.left(`The body is not valid JSON (${reason}): send a JSON object describing the route.`)
  }
}

// What the steps of a request can fail with: an answer already decided, or a typed error of a service.
/**
 * A request refused before it reached the store, carrying its answer. A class of its own, so nothing a service
 * fails with can be mistaken for an answer.
 */
class Refusal {
  constructor(readonly response: Response) {}
}

type Failure =
  | Refusal
  | Authenticator.InvalidToken
  | RouteRepository.RouteNotFound
  | RouteRepository.RouteConflict
  | RouteRepository.StoreUnavailable

/**
 * `Effect.flatMap`, folded at once when `self` has already completed (an `Exit`): `succeed(a)` then `f` is `f(a)`,
 * `fail(e)` then `f` is `fail(e)`. The result is the same; only, when nothing on the way suspends, no fiber has to run
 * it, which is most of the cost of a request (measured: bench/).
 */
const andThen = <A, E, B, E2>(
  self: Effect.Effect<A, E>,
  f: (a: A) => Effect.Effect<B, E2>
): Effect.Effect<B, E | E2> => {
  if (!Exit.isExit(self)) return Effect.flatMap(self, f)
  const exit = self as Exit.Exit<A, E>
  return Exit.isSuccess(exit) ? f(exit.value) : Exit.failCause(exit.cause)
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/**
 * Binds the core to the `RouteRepository` and `Authenticator` in context.
 *
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<RoutingHandler, never, Services> =>
  Effect.gen(function*() {
    const repository = yield* RouteRepository.RouteRepository
    const authenticator = yield* Authenticator.Authenticator
    return makeWith(repository, authenticator, options)
  })

/**
 * The core over explicit services (what `make` does with the ones in context).
 *
 * @since 0.1.0
 */
export const makeWith = (
  repository: Context.Tag.Service<RouteRepository.RouteRepository>,
  authenticator: Context.Tag.Service<Authenticator.Authenticator>,
  options: Options = {}
): RoutingHandler => {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const bodyTimeout = options.bodyTimeoutMillis ?? DEFAULT_BODY_TIMEOUT_MILLIS
  const retryAfter = String(options.retryAfterSeconds ?? 1)

  // Connection: close, because the rest of the body is left unread.
  const TOO_LARGE = new Refusal(problem(
    "payload_too_large",
    `The body is larger than the limit of ${maxBodyBytes} bytes: send a smaller route definition.`,
    { connection: "close" }
  ))
  const TIMED_OUT = new Refusal(problem(
    "request_timeout",
    `The body did not arrive within ${bodyTimeout} ms: send it in full, without pauses.`,
    { connection: "close" }
  ))
  const INCOMPLETE = new Refusal(problem(
    "malformed_json",
    "The body ended before it was complete: send the whole JSON object."
  ))
  const UNAVAILABLE = problem(
    "store_unavailable",
    `The route store is unavailable right now and nothing was written: retry after ${
      plural(Number(retryAfter), "second")
    }.`,
    { "retry-after": retryAfter }
  )

  const conflict = (e: RouteRepository.RouteConflict) =>
    problem(
      "route_conflict",
      `${e.method} ${e.path} has the same method and shape as route ${e.conflictingRouteId}: a router could not tell them apart.`,
      undefined,
      { conflictingRouteId: e.conflictingRouteId }
    )

  const routeNotFound = (id: string) => problem("route_not_found", `No route has the id ${JSON.stringify(id)}.`)

  // A typed failure is an answer; anything else (a defect) is logged and answered without its cause.
  const fromCause = (cause: Cause.Cause<Failure>, id: string | undefined): Effect.Effect<Response> => {
    const failure = Cause.failureOption(cause)
    if (failure._tag === "Some") {
      const error: unknown = failure.value
      if (error instanceof Refusal) return Exit.succeed(error.response)
      // A service may fail with something outside its declared errors: that is a defect, answered below.
      switch ((error as { _tag?: unknown } | null)?._tag) {
        case "InvalidToken":
          // The reason is the authenticator's, never the token.
          return Effect.as(
            Effect.logDebug("route-registry: token refused", (error as Authenticator.InvalidToken).reason),
            INVALID_TOKEN
          )
        case "RouteNotFound":
          return Exit.succeed(routeNotFound(id ?? ""))
        case "RouteConflict":
          return Exit.succeed(conflict(error as RouteRepository.RouteConflict))
        case "StoreUnavailable":
          return Exit.succeed(UNAVAILABLE)
      }
    } else if (Cause.isInterruptedOnly(cause)) {
      // No failure to answer, and no one waiting for the answer.
      return Effect.failCause(cause as Cause.Cause<never>)
    }
    return Effect.as(
      Effect.logError("route-registry: unexpected error while answering a request", cause),
      internalError
    )
  }

  const answer = (effect: Effect.Effect<Response, Failure>, id?: string): Effect.Effect<Response> => {
    if (!Exit.isExit(effect)) {
      return Effect.matchCauseEffect(effect, { onSuccess: Exit.succeed, onFailure: (cause) => fromCause(cause, id) })
    }
    const exit = effect as Exit.Exit<Response, Failure>
    return Exit.isSuccess(exit) ? exit as Exit.Exit<Response> : fromCause(exit.cause, id)
  }

  // Authentication and scope come first, before anything is read: an unauthenticated caller learns nothing more.
  const authorized = (
    request: Request,
    scope: Authenticator.Scope,
    refusal: Response,
    then: () => Effect.Effect<Response, Failure>
  ): Effect.Effect<Response, Failure> => {
    const token = credential(request.header("authorization"))
    if (!Redacted.isRedacted(token)) return Exit.succeed(token)
    return andThen(
      authenticator.authenticate(token),
      (principal) => principal.scopes.includes(scope) ? then() : Exit.succeed(refusal)
    )
  }

  const readBody = (request: Request): Effect.Effect<unknown, Refusal> => {
    const contentType = request.header("content-type")
    if (!isJson(contentType)) {
      return Exit.fail(
        new Refusal(problem(
          "unsupported_media_type",
          `Send the body as JSON with "Content-Type: application/json" (got ${
            contentType === undefined ? "no Content-Type" : JSON.stringify(contentType)
          }).`
        ))
      )
    }
    const declared = request.header("content-length")
    if (declared !== undefined && Number(declared) > maxBodyBytes) return Exit.fail(TOO_LARGE)
    return Effect.matchEffect(request.body(maxBodyBytes, bodyTimeout), {
      onFailure: (failure) =>
        Effect.fail(failure === "TooLarge" ? TOO_LARGE : failure === "Timeout" ? TIMED_OUT : INCOMPLETE),
      onSuccess: (bytes) =>
        Either.match(parseJson(bytes), {
          onLeft: (detail) => Exit.fail(new Refusal(problem("malformed_json", detail))),
          onRight: Exit.succeed
        })
    })
  }

  const created = (route: Route.Route): Response => ({
    status: 201,
    headers: { "content-type": "application/json", location: location(route.id) },
    body: Route.toJson(route)
  })

  const found = (route: Route.Route): Response => ({ status: 200, headers: JSON_HEADERS, body: Route.toJson(route) })

  const store = (body: unknown): Effect.Effect<Response, Failure> =>
    Either.match(Route.validateCreate(body), {
      onLeft: (errors) =>
        Exit.succeed(problem(
          "invalid_route",
          `The route definition breaks ${plural(errors.length, "rule")}: see "errors" for each one.`,
          undefined,
          { errors }
        )),
      onRight: (input) =>
        andThen(repository.create(input), (route) =>
          // The Location header is built from the id alone; an id of any other form (a faulty store) is a defect,
          // never a header.
          Route.isRouteId(route.id)
            ? Exit.succeed(created(route))
            : Effect.dieMessage(`the store returned a route whose id is not a route id: ${JSON.stringify(route.id)}`))
    })

  // A store that can answer from memory at once is read at once; any other store through its Effect.
  const read = (id: string): Effect.Effect<Response, Failure> => {
    if (repository.unsafeFindById === undefined) return Effect.map(repository.findById(id), found)
    const route = repository.unsafeFindById(id)
    return Exit.succeed(route === undefined ? routeNotFound(id) : found(route))
  }

  const create = (request: Request): Effect.Effect<Response> =>
    answer(authorized(request, "routes:write", WRITE_SCOPE, () => andThen(readBody(request), store)))

  const get = (request: Request, id: string): Effect.Effect<Response> =>
    answer(authorized(request, "routes:read", READ_SCOPE, () => read(id)), id)

  return {
    handle: (request) => {
      const path = request.path
      if (path === COLLECTION) {
        return request.method === "POST"
          ? create(request)
          : Effect.succeed(methodNotAllowed(request.method, path, "POST"))
      }
      if (path.startsWith(ITEM_PREFIX) && path.indexOf("/", ITEM_PREFIX.length) === -1) {
        return request.method === "GET"
          ? get(request, path.slice(ITEM_PREFIX.length))
          : Effect.succeed(methodNotAllowed(request.method, path, "GET"))
      }
      return undefined
    }
  }
}
