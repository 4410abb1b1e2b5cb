/**
 * The router as an Effect `HttpApp`: it serves the stored routes with the host's handlers (`HttpApp`s) and
 * middleware (`HttpMiddleware`-style functions), registered by name (CONTRACT §11). The route and its parameters are
 * the `Match` service. A request that no stored route serves fails with `RouteNotFound`, so the host's router or
 * server answers it as it answers any unknown path.
 *
 * @since 0.2.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Context, Effect } from "effect"
import * as Answers from "./internal/routerAnswers.js"
import type * as Route from "./Route.js"
import * as RouteTable from "./RouteTable.js"

/**
 * The route serving the current request, and its parameters (percent-decoded).
 *
 * @since 0.2.0
 */
export class Match extends Context.Tag("route-registry/RouterHttpApp/Match")<Match, {
  readonly route: Route.StoredRoute
  readonly params: Readonly<Record<string, string>>
}>() {}

/**
 * A middleware wraps the rest of the route (the next middleware, then the handler): it may answer itself and never
 * run `app`, or run it and change its answer.
 *
 * @since 0.2.0
 */
export type Middleware<E, R> = (app: HttpApp.Default<E, R | Match>) => HttpApp.Default<E, R | Match>

/**
 * The host's handlers and middleware, by the names routes give them.
 *
 * @since 0.2.0
 */
export interface Functions<E, R> {
  readonly handlers: Readonly<Record<string, HttpApp.Default<E, R | Match>>>
  readonly middleware?: Readonly<Record<string, Middleware<E, R>>> | undefined
}

const toResponse = (answer: Answers.Answer) =>
  HttpServerResponse.text(answer.body, {
    status: answer.status,
    headers: answer.headers,
    contentType: answer.headers["content-type"]
  })

/**
 * The app over the table in context. Lookups read the table in memory, never the store.
 *
 * @since 0.2.0
 */
export const make = <E, R>(
  functions: Functions<E, R>
): Effect.Effect<
  HttpApp.Default<E | HttpServerError.RouteNotFound, Exclude<R, Match>>,
  never,
  RouteTable.RouteTable
> =>
  Effect.gen(function*() {
    const table = yield* RouteTable.RouteTable
    const middleware = functions.middleware ?? {}
    const missing = new Set<string>()
    // Each stored version of a route composes its app once (an update is a new object).
    const composed = new WeakMap<Route.StoredRoute, HttpApp.Default<E, R | Match> | string>()

    const appOf = (route: Route.StoredRoute): HttpApp.Default<E, R | Match> | string => {
      let app = composed.get(route)
      if (app === undefined) {
        const fns = Answers.resolveFunctions<unknown>(route, functions.handlers, middleware)
        app = typeof fns === "string" ? fns : compose(fns)
        composed.set(route, app)
      }
      return app
    }

    const compose = (fns: ReadonlyArray<unknown>): HttpApp.Default<E, R | Match> => {
      const handler = fns[fns.length - 1] as HttpApp.Default<E, R | Match>
      return (fns.slice(0, -1) as ReadonlyArray<Middleware<E, R>>).reduceRight((app, wrap) => wrap(app), handler)
    }

    const unavailable = (name: string) => {
      const answer = Effect.succeed(toResponse(Answers.handlerUnavailable(name)))
      if (missing.has(name)) return answer
      missing.add(name)
      // Logged once per name: another process of the host may have it, and each request would say the same.
      return Effect.zipRight(
        Effect.logWarning(`route-registry: no function is registered under the name ${JSON.stringify(name)}`),
        answer
      )
    }

    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): HttpApp.Default<
      E | HttpServerError.RouteNotFound,
      Exclude<R, Match>
    > => {
      const found = RouteTable.lookup(table, request.method, request.url)
      switch (found._tag) {
        case "BadPath":
          return Effect.succeed(toResponse(Answers.malformedPath(found.reason)))
        case "NotFound":
        case "MethodNotAllowed":
          return Effect.fail(new HttpServerError.RouteNotFound({ request }))
      }
      const app = appOf(found.route)
      if (typeof app === "string") return unavailable(app)
      return Effect.provideService(app, Match, { route: found.route, params: found.params }) as HttpApp.Default<
        E,
        Exclude<R, Match>
      >
    })
  })
