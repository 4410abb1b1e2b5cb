/**
 * The router as a Node request listener `(req, res, next?)`, for `node:http`, Express and Fastify: it serves the
 * stored routes with the host's own Connect-style handler and middleware functions, registered by name
 * (CONTRACT §11). The table it reads is kept current by the store, so a route serves traffic as soon as it is
 * created and stops when it is deleted.
 *
 * @since 0.2.0
 */
import type { Layer } from "effect"
import { Cause, Effect, Runtime } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Connect from "./internal/connect.js"
import * as Disposable from "./internal/disposable.js"
import * as Answers from "./internal/routerAnswers.js"
import type * as Route from "./Route.js"
import * as RouteTable from "./RouteTable.js"

/**
 * A handler or middleware: Connect-style, as in Express. It answers with `res`, or calls `next()` to pass on (a
 * middleware to the next function of the route, a handler to the host), or fails with `next(error)`, a throw or a
 * rejected promise. The route and its parameters are `NodeRouter.matchOf(req)` (and `req.params`, as in Express).
 *
 * @since 0.2.0
 */
export type RouteFunction = Connect.NodeFunction

/**
 * The host's functions, by the names routes give them.
 *
 * @since 0.2.0
 */
export interface Functions {
  readonly handlers: Readonly<Record<string, RouteFunction>>
  readonly middleware?: Readonly<Record<string, RouteFunction>> | undefined
}

/**
 * The route that serves a request, and its parameters (percent-decoded).
 *
 * @since 0.2.0
 */
export interface Match {
  readonly route: Route.StoredRoute
  readonly params: Readonly<Record<string, string>>
}

/**
 * A Node request listener. With `next` (Express, Connect, a host's fallback), a request that no stored route serves
 * is passed on, and so are errors of the route's functions (`next(error)`); without it, they are answered with
 * problem documents (404 `not_found`, 405 `method_not_allowed`, 500 `internal_error`).
 *
 * @since 0.2.0
 */
export interface Listener {
  (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void
}

/**
 * A listener that owns its services; `dispose` releases them.
 *
 * @since 0.2.0
 */
export interface DisposableListener extends Listener {
  readonly dispose: () => Promise<void>
}

const MATCH = Symbol.for("route-registry/NodeRouter/Match")

interface Matched extends IncomingMessage {
  [MATCH]?: Match
  params?: Readonly<Record<string, string>>
}

/**
 * The match of a request the router is serving: for the route's functions.
 *
 * @since 0.2.0
 */
export const matchOf = (req: IncomingMessage): Match | undefined => (req as Matched)[MATCH]

const write = (res: ServerResponse, answer: Answers.Answer) => {
  if (res.headersSent || res.destroyed) return
  res.writeHead(answer.status, { ...answer.headers, "content-length": Buffer.byteLength(answer.body) })
  res.end(answer.body)
}

/**
 * The listener over the table in context. It looks routes up in memory, never in the store.
 *
 * @since 0.2.0
 */
export const make = (functions: Functions): Effect.Effect<Listener, never, RouteTable.RouteTable> =>
  Effect.gen(function*() {
    const table = yield* RouteTable.RouteTable
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const middleware = functions.middleware ?? {}
    const missing = new Set<string>()
    // The functions of a route, resolved once per stored version of it (an update is a new object).
    const resolved = new WeakMap<Route.StoredRoute, ReadonlyArray<RouteFunction> | string>()

    const resolve = (route: Route.StoredRoute): ReadonlyArray<RouteFunction> | string => {
      let fns = resolved.get(route)
      if (fns === undefined) {
        fns = Answers.resolveFunctions(route, functions.handlers, middleware)
        resolved.set(route, fns)
      }
      return fns
    }

    const unavailable = (res: ServerResponse, name: string) => {
      // Logged once per name: another process of the host may have it, and each request would say the same.
      if (!missing.has(name)) {
        missing.add(name)
        runFork(Effect.logWarning(`route-registry: no function is registered under the name ${JSON.stringify(name)}`))
      }
      write(res, Answers.handlerUnavailable(name))
    }

    const fail = (res: ServerResponse, next: ((error?: unknown) => void) | undefined) => (error: unknown) => {
      if (next !== undefined) return next(error)
      runFork(Effect.logError("route-registry: a route function failed", Cause.die(error)))
      // A whole answer is left to finish; a partial one is cut, so the client cannot take it for whole.
      if (res.writableEnded) return
      if (res.headersSent) res.destroy()
      else write(res, Answers.internalError)
    }

    const stray = (error: unknown) =>
      runFork(Effect.logError("route-registry: a route function failed after it had passed on", Cause.die(error)))

    return (req, res, next) => {
      const found = RouteTable.lookup(table, req.method ?? "GET", req.url ?? "/")
      switch (found._tag) {
        case "BadPath":
          return write(res, Answers.malformedPath(found.reason))
        case "NotFound":
          return next !== undefined ? next() : write(res, Answers.notFound)
        case "MethodNotAllowed":
          return next !== undefined ? next() : write(res, Answers.methodNotAllowed(found.allow))
      }
      const fns = resolve(found.route)
      if (typeof fns === "string") return unavailable(res, fns)
      const matched = req as Matched
      matched[MATCH] = { route: found.route, params: found.params }
      matched.params = found.params
      Connect.run(
        fns,
        req,
        res,
        (error) => error ? fail(res, next)(error) : next !== undefined ? next() : write(res, Answers.notFound),
        stray
      )
    }
  })

/**
 * Builds the services of `layer` now (the table is loaded before this resolves) and returns the listener.
 *
 * @since 0.2.0
 */
export const fromLayer = <E>(
  layer: Layer.Layer<RouteTable.RouteTable, E>,
  functions: Functions
): Promise<DisposableListener> => Disposable.fromLayer(layer, make(functions))
