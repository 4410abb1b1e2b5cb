/**
 * The router (the stored routes) as a Node request listener `(req, res, next?)`, for `node:http`, Express and Fastify:
 * it serves the stored routes with the host's own Connect-style handler and middleware functions, registered by name
 * (a route naming one this process has not registered is answered `503 handler_unavailable`). The table it reads is
 * kept current by the store, so a route serves traffic as soon as it is created and stops when it is deleted. Named
 * `NodeRouter` before 0.4.0 (a deprecated alias still).
 *
 * @since 0.4.0
 */
import type { Layer, Schema } from "effect"
import { Cause, Effect, Either, Runtime } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Catalog from "./Catalog.js"
import * as HostPaths from "./HostPaths.js"
import * as Disposable from "./internal/disposable.js"
import { nameOf } from "./internal/route/fields.js"
import * as Connect from "./internal/router/chain.js"
import * as RouterCore from "./internal/router/core.js"
import * as Guard from "./internal/router/guard.js"
import * as Otel from "./internal/router/otel.js"
import * as Answers from "./internal/router/problems.js"
import * as RouteMatch from "./internal/router/routeMatch.js"
import * as Splits from "./internal/router/split.js"
import * as NodeResponse from "./internal/transport/nodeResponse.js"
import type { InvalidOption } from "./InvalidOption.js"
import type * as Route from "./Route.js"
import * as RouteTable from "./RouteTable.js"

/**
 * A handler or middleware: Connect-style, as in Express. It answers with `res`, or calls `next()` to pass on (a
 * middleware to the next function of the route, a handler to the host), or fails with `next(error)`, a throw or a
 * rejected promise. The route and its parameters are `RouterListener.matchOf(req)` (and `req.params`, as in Express).
 *
 * @since 0.2.0
 */
export type RouteFunction = Connect.NodeFunction

/**
 * A middleware that takes a config: a `RouteFunction` that also receives the route's config, decoded by the schema it
 * was registered with (`configured`).
 *
 * @since 0.5.0
 */
export type ConfiguredFunction<A> = (
  req: IncomingMessage,
  res: ServerResponse,
  next: (error?: unknown) => void,
  config: A
) => unknown

/**
 * A middleware registered with the schema of its config. The router decodes each route's config once per stored
 * version of the route and calls `middleware` with the decoded value on every request; a config the schema refuses
 * makes the route answer `503 route_misconfigured`, and, with catalog checking on, is refused on write.
 *
 * @since 0.5.0
 */
export const configured = <A, I>(
  config: Schema.Schema<A, I, never>,
  middleware: ConfiguredFunction<A>
): Catalog.Configured<ConfiguredFunction<any>> => Catalog.configured(config, middleware)

/**
 * The host's functions, by the names routes give them; a middleware may take a config (`configured`, 0.5.0).
 *
 * @since 0.2.0
 */
export interface Functions {
  readonly handlers: Readonly<Record<string, RouteFunction>>
  readonly middleware?:
    | Readonly<Record<string, RouteFunction | Catalog.Configured<ConfiguredFunction<any>>>>
    | undefined
}

/**
 * A configured middleware as a `RouteFunction` with its decoded config: the one closure a request then calls.
 *
 * @since 0.5.0
 */
export const bindConfig = <A>(middleware: ConfiguredFunction<A>, config: A): RouteFunction => (req, res, next) =>
  middleware(req, res, next, config)

/**
 * The route that serves a request, and its parameters (percent-decoded).
 *
 * @since 0.2.0
 */
export type Match = RouteMatch.Match

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

interface Matched extends IncomingMessage {
  params?: Readonly<Record<string, string>>
}

/**
 * The match of a request the router is serving: for the route's functions, and for the host's code that runs after
 * them (`res.on("finish", () => matchOf(req))`); `undefined` for a request no stored route served.
 *
 * @since 0.2.0
 */
export const matchOf = (req: IncomingMessage): Match | undefined => RouteMatch.get(req)

// The keys keep the module's name before 0.4.0 (NodeRouter): a key is shared with every copy of the library loaded.
const ALLOW = Symbol.for("route-registry/NodeRouter/Allow")

interface Refused extends IncomingMessage {
  [ALLOW]?: ReadonlyArray<string>
}

/**
 * For a request the router handed to the host's `next` because stored routes serve its path with other methods only:
 * those methods (sorted, `HEAD` wherever `GET` is), for the host to answer `405 Method Not Allowed` with
 * `Allow: ${allow.join(", ")}`, as the router does when it has no `next`; `undefined` for any other request.
 *
 * @since 0.4.0
 */
export const allowOf = (req: IncomingMessage): ReadonlyArray<string> | undefined => (req as Refused)[ALLOW]

/**
 * The router's options (`bodyTimeoutMillis`); each is checked when the router is made, which fails with
 * `InvalidOption` naming one out of its range.
 *
 * @since 0.2.0
 */
export type Options = Guard.Options

// One routed request: its route, how far its chain has got, and who answers it now.
class Serving implements Connect.Progress {
  started = 0
  /** The chain passed the request on to the host's `next`, with or without an error. */
  handedOver = false
  /** The router answered the request itself (408): what the functions do after that is not theirs to answer. */
  timedOut = false
  constructor(readonly route: Route.StoredRoute, readonly handler: string) {}
}

const SERVING = Symbol.for("route-registry/NodeRouter/Serving")

interface Guarded extends ServerResponse {
  [SERVING]?: Serving
}

const nameAt = ({ handler, route }: Serving, at: number): string =>
  at < route.middleware.length ? nameOf(route.middleware[at]!) : handler

/**
 * The listener over the table in context. It looks routes up in memory, never in the store. A path the host serves
 * itself (`HostPaths` in context) is handed to `next`, as a path no route serves is, whatever the table holds.
 *
 * A function that answers twice, writes after its answer ended, fails after its answer started or fails after it
 * passed on never takes the process down: each is logged once per route, function and kind. A function that fails
 * after its answer started has the error passed to `next(error)` when there is one, and then, unless the host's error
 * handling ended or destroyed the response, the partial answer is cut (as Express's default error handler does), so
 * the connection never hangs; with no `next` it is cut at once, and a whole answer is left to finish.
 *
 * @since 0.2.0
 */
export const make = (
  functions: Functions,
  options: Options = {}
): Effect.Effect<Listener, InvalidOption, RouteTable.RouteTable> =>
  Either.match(Guard.bodyTimeout(options), {
    onLeft: Effect.fail,
    onRight: (bodyTimeoutMillis) => listener(functions, bodyTimeoutMillis)
  })

const listener = (functions: Functions, bodyTimeoutMillis: number) =>
  Effect.gen(function*() {
    const table = yield* RouteTable.RouteTable
    const hostPaths = yield* HostPaths.HostPaths
    const runtime = yield* Effect.runtime<never>()
    const runFork = Runtime.runFork(runtime)
    yield* Effect.promise(Otel.load)
    const core = RouterCore.make<RouteFunction, RouteFunction, ReadonlyArray<RouteFunction>, ConfiguredFunction<any>>(
      functions,
      (middleware, handler) => [...middleware, handler],
      bindConfig
    )
    const timedOut = Answers.requestTimeout(bodyTimeoutMillis)
    const logError = (message: string, error: unknown) => runFork(Effect.logError(message, Cause.die(error)))
    const report = Guard.reportOnce(logError)

    const unavailable = (req: IncomingMessage, res: ServerResponse, name: string) => {
      const warning = core.warnMissing(name)
      if (warning !== undefined) runFork(warning)
      NodeResponse.write(req, res, Answers.handlerUnavailable(name))
    }

    const misconfigured = (req: IncomingMessage, res: ServerResponse, route: RouterCore.Misconfigured) => {
      const message = core.misconfiguredOnce(route)
      if (message !== undefined) runFork(Effect.logError(message))
      NodeResponse.write(req, res, Answers.routeMisconfigured)
    }

    const misbehaved = (serving: Serving, at: number, what: Guard.Misbehaviour, error: unknown) => {
      // After the router's own 408, what the functions do is the consequence of it, not a fault of theirs.
      if (!serving.timedOut) report(serving.route, nameAt(serving, Math.max(at, 0)), what, error)
    }

    // Node emits 'error' on a response written after its end; with no listener, that would end the process.
    function onResponseError(this: Guarded, error: unknown) {
      const serving = this[SERVING]
      if (serving !== undefined) misbehaved(serving, serving.started - 1, Guard.kindOfResponseError(error), error)
    }

    // The host's `next`, which must not take the process down either: if it throws, the request is answered 500, or
    // its answer cut when one had started.
    const handOver = (
      serving: Serving,
      req: IncomingMessage,
      res: ServerResponse,
      next: (error?: unknown) => void,
      error: unknown,
      at: number
    ) => {
      serving.handedOver = true
      try {
        if (error === undefined) next()
        else next(error)
      } catch (thrown) {
        misbehaved(serving, at, "hostThrew", thrown)
        if (res.headersSent) Guard.cut(res)
        else NodeResponse.write(req, res, Answers.internalError)
      }
    }

    const failed = (
      serving: Serving,
      req: IncomingMessage,
      res: ServerResponse,
      next: ((error?: unknown) => void) | undefined,
      error: unknown,
      at: number
    ) => {
      const answered = res.headersSent
      if (answered) misbehaved(serving, at, "failedAfterAnswering", error)
      if (next !== undefined) {
        handOver(serving, req, res, next, error, at)
        // Nothing can complete an answer its function abandoned: unless the host ended or destroyed it, it is cut.
        if (answered) Guard.cut(res)
      } else if (answered) {
        // A whole answer is left to finish; a partial one is cut, so the client cannot take it for whole.
        Guard.cut(res)
      } else {
        logError("route-registry: a route function failed", error)
        NodeResponse.write(req, res, Answers.internalError)
      }
    }

    // Past the body deadline with nothing answered: the 408, unless the request is the host's by now.
    const timeOut = (serving: Serving, req: IncomingMessage, res: ServerResponse) => {
      if (serving.handedOver) return false
      serving.timedOut = true
      NodeResponse.write(req, res, timedOut)
      return true
    }

    return ((req, res, next) => {
      const found = HostPaths.lookup(hostPaths, table, req.method ?? "GET", req.url ?? "/", req.headers)
      switch (found._tag) {
        case "BadPath":
          return NodeResponse.write(req, res, Answers.malformedPath(found.reason))
        case "NotFound":
          return next !== undefined ? next() : NodeResponse.write(req, res, Answers.notFound)
        case "MethodNotAllowed":
          if (next === undefined) return NodeResponse.write(req, res, Answers.methodNotAllowed(found.allow))
          ;(req as Refused)[ALLOW] = found.allow
          return next()
      }
      const route = found.route
      if (route.enabled === false) return NodeResponse.write(req, res, Answers.routeDisabled)
      const choice = Splits.choiceOf(route, req, Splits.incoming)
      const fns = core.resolve(route, choice?.handler)
      if (typeof fns === "string") return unavailable(req, res, fns)
      if (fns instanceof RouterCore.Misconfigured) return misconfigured(req, res, fns)
      RouteMatch.set(req, RouteMatch.withChoice(found, choice))
      ;(req as Matched).params = found.params
      Otel.nameServerSpan(req.method!, route, choice?.handler)
      const serving = new Serving(route, choice?.handler ?? route.handler)
      ;(res as Guarded)[SERVING] = serving
      res.on("error", onResponseError)
      if (Guard.bodyPending(req)) {
        Guard.watchBody(runtime, req, res, bodyTimeoutMillis, () => timeOut(serving, req, res))
      }
      Connect.run(
        fns,
        req,
        res,
        serving,
        (error, at = fns.length - 1) => {
          if (serving.timedOut) return
          if (error !== undefined) return failed(serving, req, res, next, error, at)
          if (next !== undefined) return handOver(serving, req, res, next, undefined, at)
          NodeResponse.write(req, res, Answers.notFound)
        },
        (error, at) => misbehaved(serving, at, "failedAfterPassingOn", error)
      )
    }) satisfies Listener
  })

/**
 * Builds the services of `layer` now (the table is loaded before this resolves) and returns the listener. Rejects
 * with `InvalidOption`, before building anything, when an option is out of its range.
 *
 * @since 0.2.0
 */
export const fromLayer = <E>(
  layer: Layer.Layer<RouteTable.RouteTable, E>,
  functions: Functions,
  options: Options = {}
): Promise<DisposableListener> =>
  Either.match(Guard.bodyTimeout(options), {
    onLeft: (invalid) => Promise.reject(invalid),
    onRight: (bodyTimeoutMillis) => Disposable.fromLayer(layer, listener(functions, bodyTimeoutMillis))
  })
