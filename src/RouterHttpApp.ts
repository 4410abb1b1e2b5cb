/**
 * The router as an Effect `HttpApp`: it serves the stored routes with the host's handlers (`HttpApp`s) and
 * middleware (`HttpMiddleware`-style functions), registered by name (a route naming one this process has not
 * registered is answered `503 handler_unavailable`). The route and its parameters are
 * the `Match` service. A request that no stored route serves fails with `RouteNotFound`, so the host's router or
 * server answers it as it answers any unknown path.
 *
 * @since 0.2.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { Schema } from "effect"
import { Cause, Context, Effect, Either, Fiber, Runtime, Stream, Tracer } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Catalog from "./Catalog.js"
import * as HostPaths from "./HostPaths.js"
import * as RouterCore from "./internal/router/core.js"
import * as Guard from "./internal/router/guard.js"
import * as Otel from "./internal/router/otel.js"
import * as Answers from "./internal/router/problems.js"
import type * as RouteMatch from "./internal/router/routeMatch.js"
import * as Splits from "./internal/router/split.js"
import * as Body from "./internal/transport/body.js"
import * as NodeTransport from "./internal/transport/nodeTransport.js"
import type { InvalidOption } from "./InvalidOption.js"
import type * as Route from "./Route.js"
import * as RouteTable from "./RouteTable.js"

/**
 * The route serving the current request, and its parameters (percent-decoded); for a route with a split (0.5.0), the
 * split's choice: the handler serving the request, the key and its bucket.
 *
 * @since 0.2.0
 */
export class Match extends Context.Tag("route-registry/RouterHttpApp/Match")<Match, RouteMatch.Match>() {}

/**
 * A middleware wraps the rest of the route (the next middleware, then the handler): it may answer itself and never
 * run `app`, or run it and change its answer.
 *
 * @since 0.2.0
 */
export type Middleware<E, R> = (app: HttpApp.Default<E, R | Match>) => HttpApp.Default<E, R | Match>

/**
 * A middleware that takes a config: it wraps the rest of the route as a `Middleware` does, given the route's config
 * decoded by the schema it was registered with (`configured`). It is called once per stored version of a route, so
 * the config costs a request nothing.
 *
 * @since 0.5.0
 */
export type ConfiguredMiddleware<A, E, R> = (
  app: HttpApp.Default<E, R | Match>,
  config: A
) => HttpApp.Default<E, R | Match>

/**
 * A middleware registered with the schema of its config; a config the schema refuses makes the route answer
 * `503 route_misconfigured`, and, with catalog checking on, is refused on write.
 *
 * @since 0.5.0
 */
export const configured = <A, I, E, R>(
  config: Schema.Schema<A, I, never>,
  middleware: ConfiguredMiddleware<A, E, R>
): Catalog.Configured<ConfiguredMiddleware<any, E, R>> => Catalog.configured(config, middleware)

/**
 * The host's handlers and middleware, by the names routes give them; a middleware may take a config (`configured`,
 * 0.5.0).
 *
 * @since 0.2.0
 */
export interface Functions<E, R> {
  readonly handlers: Readonly<Record<string, HttpApp.Default<E, R | Match>>>
  readonly middleware?:
    | Readonly<Record<string, Middleware<E, R> | Catalog.Configured<ConfiguredMiddleware<any, E, R>>>>
    | undefined
}

/**
 * The router's options (`bodyTimeoutMillis`, applied when it is served by `@effect/platform-node`); each is checked
 * when the app is made, which fails with `InvalidOption` naming one out of its range.
 *
 * @since 0.2.0
 */
export type Options = Guard.Options

const toResponse = (answer: Answers.Answer) =>
  HttpServerResponse.text(answer.body, {
    status: answer.status,
    headers: answer.headers,
    contentType: answer.headers["content-type"]
  })

const encoder = new TextEncoder()

// An answer that closes the connection while the body is still coming: the rest of the body is read and discarded
// before the response ends (and so before the platform closes the connection), so the client does not lose the
// answer to a reset; `then` runs after that.
const lingering = (req: IncomingMessage, answer: Answers.Answer, then: Effect.Effect<unknown>) => {
  const body = encoder.encode(answer.body)
  const rest = Stream.execute(Effect.zipRight(NodeTransport.discarding(req), then))
  return HttpServerResponse.stream(Stream.concat(Stream.succeed(body), rest), {
    status: answer.status,
    headers: answer.headers,
    contentType: answer.headers["content-type"],
    contentLength: body.length
  })
}

// The server spans of a request `route` serves, named after it (docs/observability.md): the HTTP instrumentation's, and
// Effect's own (`HttpMiddleware.tracer`), whose name changes where its tracer can (`@effect/opentelemetry`).
const nameSpans = (method: string, route: Route.StoredRoute, handler: string | undefined) =>
  Effect.map(Effect.serviceOption(Tracer.ParentSpan), (parent) => {
    Otel.nameServerSpan(method, route, handler)
    const span = parent._tag === "Some" ? parent.value : undefined
    if (span?._tag !== "Span" || span.kind !== "server") return
    Otel.setRouteAttributes({ setAttribute: (key, value) => span.attribute(key, value) }, route, handler)
    const otel = Otel.activeSpan(span.spanId)
    if (otel !== undefined) Otel.annotate(otel, method, route, handler)
  })

const ROUTE = Symbol.for("route-registry/RouterHttpApp/Route")

interface Guarded extends ServerResponse {
  [ROUTE]?: Route.StoredRoute
}

// Cuts the Node response and marks it ended, so that the platform writes nothing more on it.
const cutForGood = (res: ServerResponse) => {
  Guard.cut(res)
  res.end()
}

/**
 * The app over the table in context. Lookups read the table in memory, never the store. A path the host serves itself
 * (`HostPaths` in context) fails with `RouteNotFound`, as a path no route serves does, whatever the table holds.
 *
 * Served by `@effect/platform-node`, a route's app never takes the process down or leaves a connection hanging when
 * it misbehaves on the Node response beneath the request: a write after the response ended, an answer started there
 * and then another returned or a failure (the started answer is cut), or a streamed answer that fails midway (cut,
 * rather than ended as if whole). Each is logged once per route and kind; a failure after the answer started also
 * goes on to the host's error handling, as any failure does.
 *
 * @since 0.2.0
 */
export const make = <E, R>(
  functions: Functions<E, R>,
  options: Options = {}
): Effect.Effect<
  HttpApp.Default<E | HttpServerError.RouteNotFound, Exclude<R, Match>>,
  InvalidOption,
  RouteTable.RouteTable
> =>
  Either.match(Guard.bodyTimeout(options), {
    onLeft: Effect.fail,
    onRight: (bodyTimeoutMillis) => app(functions, bodyTimeoutMillis)
  })

const app = <E, R>(functions: Functions<E, R>, bodyTimeoutMillis: number) =>
  Effect.gen(function*() {
    const table = yield* RouteTable.RouteTable
    const hostPaths = yield* HostPaths.HostPaths
    const runtime = yield* Effect.runtime<never>()
    const runFork = Runtime.runFork(runtime)
    yield* Effect.promise(Otel.load)
    const timedOut = Answers.requestTimeout(bodyTimeoutMillis)
    const report = Guard.reportOnce((message, error) => runFork(Effect.logError(message, Cause.die(error))))

    // Node emits 'error' on a response written after its end; with no listener, that would end the process.
    function onResponseError(this: Guarded, error: unknown) {
      const route = this[ROUTE]
      if (route !== undefined) report(route, undefined, Guard.kindOfResponseError(error), error)
    }

    // What the route's app answered, checked against what its functions did to the Node response themselves.
    const answered = (
      route: Route.StoredRoute,
      res: ServerResponse,
      response: HttpServerResponse.HttpServerResponse
    ) => {
      if (res.headersSent && !res.writableEnded) {
        // An answer started on the Node response, and another returned: neither can be sent whole.
        report(
          route,
          undefined,
          "answeredTwice",
          new Error("an answer was started on the Node response and another returned")
        )
        cutForGood(res)
        return response
      }
      if (response.body._tag !== "Stream") return response
      // The platform ends a streamed answer whose stream fails as if it were whole: cut it instead.
      const stream = Stream.tapErrorCause(response.body.stream, (cause) =>
        Effect.sync(() => {
          if (Cause.isInterruptedOnly(cause)) return
          report(route, undefined, "failedAfterAnswering", Cause.squash(cause))
          Guard.cut(res)
        }))
      return HttpServerResponse.setBody(
        response,
        HttpBody.stream(stream, response.body.contentType, response.body.contentLength)
      )
    }

    const failedAfter = (route: Route.StoredRoute, res: ServerResponse, cause: Cause.Cause<unknown>) => {
      if (!res.headersSent || Cause.isInterruptedOnly(cause)) return
      report(route, undefined, "failedAfterAnswering", Cause.squash(cause))
      // A whole answer stands; a partial one is cut, and marked ended so the host's error answer is not written on it.
      if (!res.writableEnded) cutForGood(res)
    }

    // Past the body deadline with nothing answered, the 408 wins the race. The route's app is interrupted only once
    // the 408 has been sent: interrupting a body read destroys the request, and with it the connection.
    const withBodyDeadline = <A, E1, R1>(app: Effect.Effect<A, E1, R1>, req: IncomingMessage, res: ServerResponse) =>
      Effect.raceWith(Effect.interruptible(app), Effect.interruptible(bodyDeadline(req, res)), {
        onSelfDone: (exit, deadline) => Effect.zipRight(Fiber.interrupt(deadline), exit),
        onOtherDone: (_, app) => Effect.succeed(lingering(req, timedOut, Fiber.interrupt(app)))
      })

    // Completes at the body deadline if nothing has been answered by then; never, otherwise.
    const bodyDeadline = (req: IncomingMessage, res: ServerResponse) =>
      Effect.async<void>((resume) => {
        let racing = true
        Guard.watchBody(runtime, req, res, bodyTimeoutMillis, () => {
          if (!racing) return false
          racing = false
          resume(Effect.void)
          return true
        })
        return Effect.sync(() => {
          racing = false
        })
      })

    const guard = (route: Route.StoredRoute, app: HttpApp.Default<E, R | Match>): HttpApp.Default<E, R | Match> =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const res = NodeTransport.serverResponseOf(request)
        const req = request.source
        // Elsewhere than on Node, the server's own limits apply.
        if (res === undefined || !Body.isIncomingMessage(req)) return app
        ;(res as Guarded)[ROUTE] = route
        res.on("error", onResponseError)
        return Effect.matchCauseEffect(Guard.bodyPending(req) ? withBodyDeadline(app, req, res) : app, {
          onSuccess: (response) => Effect.succeed(answered(route, res, response)),
          onFailure: (cause) => {
            failedAfter(route, res, cause)
            return Effect.failCause(cause)
          }
        })
      })

    // Each stored version of a route composes its app once: its middleware around its handler, guarded.
    const core = RouterCore.make<
      HttpApp.Default<E, R | Match>,
      Middleware<E, R>,
      HttpApp.Default<E, R | Match>,
      ConfiguredMiddleware<any, E, R>
    >(
      functions,
      (middleware, handler, route) => guard(route, middleware.reduceRight((app, wrap) => wrap(app), handler)),
      (middleware, config) => (app) => middleware(app, config)
    )

    const misconfigured = (route: RouterCore.Misconfigured) => {
      const answer = Effect.succeed(toResponse(Answers.routeMisconfigured))
      const message = core.misconfiguredOnce(route)
      return message === undefined ? answer : Effect.zipRight(Effect.logError(message), answer)
    }

    const unavailable = (name: string) => {
      const answer = Effect.succeed(toResponse(Answers.handlerUnavailable(name)))
      const warning = core.warnMissing(name)
      return warning === undefined ? answer : Effect.zipRight(warning, answer)
    }

    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): HttpApp.Default<
      E | HttpServerError.RouteNotFound,
      Exclude<R, Match>
    > => {
      const found = HostPaths.lookup(hostPaths, table, request.method, request.url, request.headers)
      switch (found._tag) {
        case "BadPath":
          return Effect.succeed(toResponse(Answers.malformedPath(found.reason)))
        case "NotFound":
        case "MethodNotAllowed":
          return Effect.fail(new HttpServerError.RouteNotFound({ request }))
      }
      const route = found.route
      if (route.enabled === false) return Effect.succeed(toResponse(Answers.routeDisabled))
      const choice = Splits.choiceOf(route, request, Splits.incoming)
      const app = core.resolve(route, choice?.handler)
      if (typeof app === "string") return unavailable(app)
      if (app instanceof RouterCore.Misconfigured) return misconfigured(app)
      const params = found.params
      const match: RouteMatch.Match = choice === undefined ? { route, params } : { route, params, split: choice }
      return Effect.provideService(
        Effect.zipRight(nameSpans(request.method, route, choice?.handler), app),
        Match,
        match
      ) as HttpApp.Default<
        E,
        Exclude<R, Match>
      >
    })
  })
