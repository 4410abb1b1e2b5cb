/**
 * The Express integration: two functions for `app.use`, the registry (the routing API, then the stored
 * routes) and, beside it, an error handler, since Express skips every plain middleware once the host's body parser
 * has refused a body and only error middleware still sees the request.
 *
 * The routing API reads the body itself when nothing read it before; after `express.json()` (or any parser that
 * consumed the stream) it takes the parsed value back as JSON text, its size by `Content-Length`, and after a parser's
 * refusal it answers from what the parser reported: the text that was not JSON (`malformed_json`, or
 * `invalid_route` for a JSON value `express.json()` refuses in strict mode), or a body too large (413). The body
 * timeout is then the parser's: the request reaches the API only once the parser is done with it.
 *
 * @internal
 */
import { Exit } from "effect"
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from "express"
import type { EventEmitter } from "node:events"
import type * as RoutingHandler from "../../RoutingHandler.js"
import * as Target from "../http/target.js"
import * as Otel from "../router/otel.js"
import * as RouteMatch from "../router/routeMatch.js"
import * as Splits from "../router/split.js"
import * as Body from "../transport/body.js"
import * as NodeResponse from "../transport/nodeResponse.js"
import * as ApiPrefix from "./apiPrefix.js"
import * as NodeApi from "./nodeApi.js"
import * as Registry from "./registry.js"

export type Handler = RequestHandler
export type Match = RouteMatch.Match
/** A middleware taking the route's decoded config after Express's own arguments. */
export type ConfiguredHandler<A> = (req: Request, res: Response, next: NextFunction, config: A) => unknown
export type Options = Registry.Options<Handler, Handler, ConfiguredHandler<any>>

const bindConfig = (fn: ConfiguredHandler<unknown>, config: unknown): Handler => (req, res, next) =>
  fn(req, res, next, config)

/** What `app.use` takes: the registry, then its error handler; `close` releases its store and table. */
export interface Mounted extends Array<RequestHandler | ErrorRequestHandler> {
  /** Settles once the store and the table are ready (requests arriving before wait for it). */
  readonly ready: Promise<void>
  readonly close: () => Promise<void>
}

type BodyRead = Exit.Exit<Uint8Array, RoutingHandler.BodyFailure>

// A body a parser has already read, given back to the API as the bytes it stands for (`body-parser` makes `{}` of an
// empty JSON body).
const parsedBody = (req: Request): Uint8Array => {
  const body: unknown = req.body
  if (body === undefined || req.headers["content-length"] === "0") return new Uint8Array(0)
  if (body instanceof Uint8Array) return body
  return Buffer.from(typeof body === "string" ? body : JSON.stringify(body))
}

/** The body as read before the API, held to the API's limit: by its bytes, or the length the client declared. */
const within = (req: Request, read: BodyRead) => (maxBytes: number): BodyRead => {
  if (Exit.isFailure(read)) return read
  const declared = Number(req.headers["content-length"] ?? 0)
  return Math.max(read.value.length, Number.isFinite(declared) ? declared : 0) > maxBytes ? Exit.fail("TooLarge") : read
}

/** What a body parser's refusal (its `type`, as `body-parser` names them) says of the body; `undefined`: not one. */
const refusedBody = (error: unknown): BodyRead | undefined => {
  const { body, type } = (typeof error === "object" && error !== null ? error : {}) as {
    readonly type?: unknown
    readonly body?: unknown
  }
  switch (type) {
    case "entity.parse.failed":
      return Exit.succeed(Buffer.from(typeof body === "string" ? body : ""))
    case "entity.too.large":
      return Exit.fail("TooLarge")
    case "request.aborted":
    case "request.size.invalid":
      return Exit.fail("Incomplete")
    case "encoding.unsupported":
    case "charset.unsupported":
    case "stream.encoding.set":
    case "stream.not.readable":
      return Exit.fail("Consumed")
  }
  return undefined
}

/** The API's view of `req`; `undefined` when its path is not below `apiPrefix` (the request is the router's). */
const viewOf = (req: Request, apiPrefix: string, body: NodeApi.View["body"]): NodeApi.View | undefined => {
  const target = ApiPrefix.below(apiPrefix, req.url)
  return target === undefined
    ? undefined
    : { target, base: Target.baseOf(req.originalUrl, req.url) + apiPrefix, body }
}

/** Answers `req` when its path is the routing API's; `false`, having done nothing, when it is not. */
const served = (
  registry: Registry.Registry<Handler, Handler>,
  req: Request,
  res: Response,
  view: NodeApi.View | undefined
): boolean => view !== undefined && NodeApi.serve(registry, req, res, view)

/** The stored route serving `req`, for its functions and the host's code after them (`res.on("finish")`). */
export const matchOf = (req: Request): RouteMatch.Match | undefined => RouteMatch.get(req)

/** The registry's two functions for `app.use`. */
export const make = (options: Options): Mounted => {
  const apiPrefix = ApiPrefix.of(options.apiPrefix)
  let registry: Registry.Registry<Handler, Handler> | undefined
  let closing: Promise<void> | undefined
  const ready = Registry.start(options, (level, message) => console[level](message), bindConfig).then((made) => {
    registry = made
  })
  // Never an unhandled rejection: a request arriving after a failed start passes the error to Express.
  ready.catch(() => {})
  const close = () => (closing ??= ready.then(() => registry!.dispose(), () => {}))
  const watched = new WeakSet<EventEmitter>()
  // Express has no close of its own: the registry is released with the server that serves it.
  const closeWith = (req: Request) => {
    const server = (req.socket as { readonly server?: EventEmitter }).server
    if (server !== undefined && !watched.has(server)) {
      watched.add(server)
      server.once("close", close)
    }
  }

  const route = (registry: Registry.Registry<Handler, Handler>, req: Request, res: Response, next: NextFunction) => {
    const found = registry.lookup(req.method, req.url, req.headers)
    switch (found._tag) {
      case "BadPath":
        return NodeResponse.write(req, res, Registry.answers.malformedPath(found.reason))
      case "NotFound":
        return next()
      case "MethodNotAllowed":
        return NodeResponse.write(req, res, Registry.answers.methodNotAllowed(found.allow))
    }
    const route = found.route
    if (route.enabled === false) return NodeResponse.write(req, res, Registry.answers.routeDisabled)
    const choice = Splits.choiceOf(route, req, Splits.incoming)
    const chain = registry.chainOf(route, choice?.handler)
    if (typeof chain === "string") return NodeResponse.write(req, res, Registry.answers.handlerUnavailable(chain))
    if (chain === undefined) return NodeResponse.write(req, res, Registry.answers.routeMisconfigured)
    RouteMatch.set(req, RouteMatch.withChoice(found, choice))
    req.params = Registry.ownParams(found.params)
    Otel.nameServerSpan(req.method, route, choice?.handler)
    const fns = [...chain.middleware, chain.handler]
    let at = 0
    // Express's own rules: `next()` passes on, `next(error)` (or a throw, or a rejection) goes to error middleware,
    // and `next("route")` / `next("router")` leave the stored route for the host's next handlers.
    const step = (error?: unknown) => {
      if (error !== undefined && error !== "route" && error !== "router") return next(error)
      if (error !== undefined || at === fns.length) return next()
      const fn = fns[at++]!
      try {
        const result: unknown = fn(req, res, step)
        if (typeof (result as PromiseLike<unknown> | undefined)?.then === "function") {
          ;(result as PromiseLike<unknown>).then(undefined, (rejected) => next(rejected ?? new Error("rejected")))
        }
      } catch (thrown) {
        next(thrown)
      }
    }
    step()
  }

  const serve: RequestHandler = (req, res, next) => {
    if (registry === undefined) return void ready.then(() => serve(req, res, next), next)
    closeWith(req)
    const body = req.readableEnded ? within(req, Exit.succeed(parsedBody(req))) : Body.fromIncomingMessage(req, res)
    if (!served(registry, req, res, viewOf(req, apiPrefix, body))) route(registry, req, res, next)
  }

  const refused: ErrorRequestHandler = (error, req, res, next) => {
    const body = refusedBody(error)
    if (registry === undefined || body === undefined) return next(error)
    if (!served(registry, req, res, viewOf(req, apiPrefix, within(req, body)))) next(error)
  }

  return Object.assign([serve, refused], { ready, close })
}
