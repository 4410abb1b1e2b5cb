/**
 * The Hono integration: a Hono app for `app.route(path, …)` serving the routing API on `/v1/routing`
 * and `/v1/routing/*` (below `apiPrefix`) and the stored routes on `/*`. Hono copies a sub-app's routes into the
 * host's, after the host's own routes registered before it; a request no stored route serves is passed on with `next()` to the host's later
 * routes and its not-found handler.
 *
 * @internal
 */
import { Hono } from "hono"
import type { Context, Handler as HonoHandler, MiddlewareHandler, Next } from "hono"
import { HonoRequest } from "hono/request"
import { COLLECTION } from "../http/exchange.js"
import * as Otel from "../router/otel.js"
import * as RouteMatch from "../router/routeMatch.js"
import * as Splits from "../router/split.js"
import * as Body from "../transport/body.js"
import * as WebResponse from "../transport/webResponse.js"
import * as ApiPrefix from "./apiPrefix.js"
import * as Registry from "./registry.js"

export type Handler = HonoHandler
export type Middleware = MiddlewareHandler
export type Match = RouteMatch.Match
/** A middleware taking the route's decoded config after Hono's own arguments. */
export type ConfiguredMiddleware<A> = (c: Context, next: Next, config: A) => Promise<Response | void>
export type Options = Registry.Options<Handler, Middleware, ConfiguredMiddleware<any>>

const bindConfig = (fn: ConfiguredMiddleware<unknown>, config: unknown): Middleware => (c, next) => fn(c, next, config)

/** The Hono app, with `ready` (settled once its store and table are) and `close` (releasing them). */
export type Mounted = Hono & {
  readonly ready: Promise<void>
  readonly close: () => Promise<void>
}

const API_ROUTES = [COLLECTION, `${COLLECTION}/*`]
const ROUTER_ROUTE = "/*"

/** The path the app is mounted under: what the host's `app.route(path, …)` put before the route that matched. */
const baseOf = (c: Context, route: string): string => {
  const matched = c.req.routePath
  return matched.endsWith(route) ? matched.slice(0, matched.length - route.length) : ""
}

// The request target as the client sent it, where the server keeps it (`@hono/node-server` hands Node's request over
// as `c.env.incoming`). A fetch `Request`'s URL has been through WHATWG URL parsing, which removes dot segments
// (`%2e%2e` too), and docs/router.md normalises no further than RFC 3986 §6.2.2: `/public/%2e%2e/v1/routing` is not
// the API's.
const sentTarget = (c: Context): string => {
  const url = (c.env as { readonly incoming?: { readonly url?: unknown } } | undefined)?.incoming?.url
  if (typeof url === "string" && url.charCodeAt(0) === 47 /* / */) return url
  const parsed = new URL(c.req.url)
  return parsed.pathname + parsed.search
}

// A split's key as the other forms read it: the header's value as the server gives it, the target as the client sent it.
const honoRequest: Splits.Reader<Context> = { header: (c, name) => c.req.raw.headers.get(name), target: sentTarget }

/**
 * The request path below the mount, and the query, as the client sent them (`c.req.path` is percent-decoded);
 * `undefined` when the path the client sent is not below the mount (Hono matched it only once normalised).
 */
const targetBelow = (
  c: Context,
  base: string
): { readonly path: string; readonly query: string } | undefined => {
  const target = sentTarget(c)
  const mark = target.indexOf("?")
  const path = mark === -1 ? target : target.slice(0, mark)
  if (path !== base && !path.startsWith(base + "/")) return undefined
  return { path: path.slice(base.length) || "/", query: mark === -1 ? "" : target.slice(mark + 1) }
}

// The stored route's request as Hono's handlers read it: `c.req.param()` answers the stored route's parameters
// (percent-decoded) from a record without a prototype, where Hono's own builds a plain object (losing `__proto__`)
// and looks a name up in it (finding `toString` on any route, a 500 when decoded); `c.req.routePath` is the pattern.
class StoredRouteRequest extends HonoRequest {
  readonly #params: Readonly<Record<string, string>>
  constructor(c: Context, params: Readonly<Record<string, string>>, path: string) {
    const handler = () => undefined
    super(c.req.raw, c.req.path, [[[[handler, { basePath: "/", path, method: "ALL", handler }], {}]]])
    this.#params = Registry.ownParams(params)
  }
  override param(key?: string): any {
    if (key === undefined) return Registry.ownParams(this.#params)
    return Object.hasOwn(this.#params, key) ? this.#params[key] : undefined
  }
}

const withParams = (c: Context, params: Readonly<Record<string, string>>, path: string) =>
  Object.defineProperty(c, "req", { value: new StoredRouteRequest(c, params, path), configurable: true })

/** Runs the route's middleware in order, then its handler, as Hono composes them. */
const runChain = async (c: Context, chain: Registry.Chain<Handler, Middleware>, next: Next) => {
  const dispatch = async (at: number): Promise<Response | void> => {
    if (at > chain.middleware.length) return next()
    const fn = at === chain.middleware.length ? chain.handler : chain.middleware[at]!
    const answered = await fn(c, async () => {
      const response = await dispatch(at + 1)
      if (response instanceof Response) c.res = response
    })
    return answered instanceof Response ? answered : c.finalized ? c.res : undefined
  }
  return dispatch(0)
}

/** The stored route serving the request of `c`, for its functions and the host's middleware around the mount. */
export const matchOf = (c: Context): RouteMatch.Match | undefined => RouteMatch.get(c)

/** The registry as a Hono app. */
export const make = (options: Options): Mounted => {
  let registry: Registry.Registry<Handler, Middleware> | undefined
  let closing: Promise<void> | undefined
  const ready = Registry.start(options, (level, message) => console[level](message), bindConfig).then(
    (made) => {
      registry = made
    }
  )
  // Never an unhandled rejection: requests after a failed start fail with its error, to the host's `onError`.
  ready.catch(() => {})
  const started = async () => registry ?? (await ready, registry!)

  const apiPrefix = ApiPrefix.of(options.apiPrefix)
  const app = new Hono()
  for (const route of API_ROUTES) {
    app.all(apiPrefix + route, async (c, next) => {
      const { api, run } = await started()
      const base = baseOf(c, apiPrefix + route) + apiPrefix
      const target = targetBelow(c, base)
      if (target === undefined) return next()
      const request = c.req.raw
      const effect = api.handle({
        ...target,
        method: request.method,
        base,
        header: (name) => request.headers.get(name) ?? undefined,
        body: Body.fromWebRequest(request)
      })
      if (effect === undefined) return next()
      return WebResponse.toWeb(await run(effect), request.signal)
    })
  }
  app.all(ROUTER_ROUTE, async (c, next) => {
    const { chainOf, lookup } = await started()
    const base = baseOf(c, ROUTER_ROUTE)
    const target = targetBelow(c, base)
    if (target === undefined) return next()
    const { path, query } = target
    const found = lookup(c.req.method, query === "" ? path : `${path}?${query}`, c.req.raw.headers)
    switch (found._tag) {
      case "BadPath":
        return WebResponse.toWeb(Registry.answers.malformedPath(found.reason))
      case "NotFound":
        return next()
      case "MethodNotAllowed":
        return WebResponse.toWeb(Registry.answers.methodNotAllowed(found.allow))
    }
    const route = found.route
    if (route.enabled === false) return WebResponse.toWeb(Registry.answers.routeDisabled)
    const choice = Splits.choiceOf(route, c, honoRequest)
    const chain = chainOf(route, choice?.handler)
    if (typeof chain === "string") return WebResponse.toWeb(Registry.answers.handlerUnavailable(chain))
    if (chain === undefined) return WebResponse.toWeb(Registry.answers.routeMisconfigured)
    withParams(c, found.params, base + route.path)
    RouteMatch.set(c, RouteMatch.withChoice(found, choice))
    Otel.nameServerSpan(c.req.method, route, choice?.handler)
    return runChain(c, chain, next)
  })
  const close = () => (closing ??= ready.then(() => registry!.dispose(), () => {}))
  return Object.assign(app, { ready, close })
}
