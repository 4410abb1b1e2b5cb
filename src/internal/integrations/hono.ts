/**
 * The Hono integration: a Hono app for `app.route(path, …)` serving the routing API on `/v1/routing`
 * and `/v1/routing/*` and the stored routes on `/*`. Hono copies a sub-app's routes into the host's, after the host's
 * own routes registered before it; a request no stored route serves is passed on with `next()` to the host's later
 * routes and its not-found handler.
 *
 * @internal
 */
import { Hono } from "hono"
import type { Context, Handler as HonoHandler, MiddlewareHandler, Next } from "hono"
import { HonoRequest } from "hono/request"
import * as Problem from "../../Problem.js"
import * as RouteTable from "../../RouteTable.js"
import type * as RoutingHandler from "../../RoutingHandler.js"
import * as Body from "../http/body.js"
import { COLLECTION } from "../http/exchange.js"
import * as WebStream from "../http/webStream.js"
import * as RouteMatch from "../router/match.js"
import * as Otel from "../router/otel.js"
import * as Registry from "./registry.js"

export type Handler = HonoHandler
export type Middleware = MiddlewareHandler
export type Match = RouteMatch.Match
export type Options = Registry.Options<Handler, Middleware>

/** The Hono app, with `ready` (settled once its store and table are) and `close` (releasing them). */
export type Mounted = Hono & {
  readonly ready: Promise<void>
  readonly close: () => Promise<void>
}

const API_ROUTES = [COLLECTION, `${COLLECTION}/*`]
const ROUTER_ROUTE = "/*"

// A 204 or 304 must be built with a null body. A problem's status text is its title, as in its body.
const toWeb = (answer: RoutingHandler.Response, signal?: AbortSignal): Response =>
  new Response(
    answer.stream !== undefined
      ? WebStream.readable(answer.stream, { signal })
      : answer.status === 204 || answer.status === 304
      ? null
      : answer.body,
    {
      status: answer.status,
      statusText: Problem.titles[answer.status] ?? "",
      headers: answer.headers
    }
  )

/** The path the app is mounted under: what the host's `app.route(path, …)` put before the route that matched. */
const baseOf = (c: Context, route: string): string => {
  const matched = c.req.routePath
  return matched.endsWith(route) ? matched.slice(0, matched.length - route.length) : ""
}

/** The request path below the mount, and the query, as received (`c.req.path` is percent-decoded). */
const targetBelow = (c: Context, base: string): { readonly path: string; readonly query: string } => {
  const url = new URL(c.req.url)
  return { path: url.pathname.slice(base.length) || "/", query: url.search.slice(1) }
}

// The stored route's parameters where Hono's handlers read them (`c.req.param()`): a request of the stored route's
// own, as Hono's router would have made it. Hono percent-decodes what it holds, so the values it holds are encoded.
const withParams = (c: Context, params: Readonly<Record<string, string>>, path: string) => {
  const encoded: Record<string, string> = {}
  for (const name in params) encoded[name] = encodeURIComponent(params[name]!)
  const handler = () => undefined
  const req = new HonoRequest(c.req.raw, c.req.path, [[[
    [handler, { basePath: "/", path, method: "ALL", handler }],
    encoded
  ]]])
  Object.defineProperty(c, "req", { value: req, configurable: true })
}

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
  const ready = Registry.start<Handler, Middleware>(options, (level, message) => console[level](message)).then(
    (made) => {
      registry = made
    }
  )
  // Never an unhandled rejection: requests after a failed start fail with its error, to the host's `onError`.
  ready.catch(() => {})
  const started = async () => registry ?? (await ready, registry!)

  const app = new Hono()
  for (const route of API_ROUTES) {
    app.all(route, async (c, next) => {
      const { api, run } = await started()
      const base = baseOf(c, route)
      const request = c.req.raw
      const effect = api.handle({
        ...targetBelow(c, base),
        method: request.method,
        base,
        header: (name) => request.headers.get(name) ?? undefined,
        body: Body.fromWebRequest(request)
      })
      if (effect === undefined) return next()
      return toWeb(await run(effect), request.signal)
    })
  }
  app.all(ROUTER_ROUTE, async (c, next) => {
    const { chainOf, table } = await started()
    const base = baseOf(c, ROUTER_ROUTE)
    const { path, query } = targetBelow(c, base)
    const found = RouteTable.lookup(table, c.req.method, query === "" ? path : `${path}?${query}`)
    switch (found._tag) {
      case "BadPath":
        return toWeb(Registry.answers.malformedPath(found.reason))
      case "NotFound":
        return next()
      case "MethodNotAllowed":
        return toWeb(Registry.answers.methodNotAllowed(found.allow))
    }
    const chain = chainOf(found.route)
    if (typeof chain === "string") return toWeb(Registry.answers.handlerUnavailable(chain))
    withParams(c, found.params, base + found.route.path)
    RouteMatch.set(c, found)
    Otel.nameServerSpan(c.req.method, found.route)
    return runChain(c, chain, next)
  })
  const close = () => (closing ??= ready.then(() => registry!.dispose(), () => {}))
  return Object.assign(app, { ready, close })
}
