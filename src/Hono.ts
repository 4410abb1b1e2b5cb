/**
 * The registry in a Hono 4 app: the routing API and the router over one store and one table, as a
 * Hono app to mount with `app.route`. It runs on `@hono/node-server` and on any fetch host.
 *
 * @example
 * ```ts
 * import { Hono } from "hono"
 * import { routeRegistry } from "route-registry/hono"
 *
 * const app = new Hono()
 * app.route("/", routeRegistry({
 *   authenticator: Authenticator.layerStaticTokens(tokens),
 *   handlers: { showUser: (c) => c.json({ id: c.req.param("id") }) },
 *   middleware: { auth: async (c, next) => (c.req.header("authorization") ? next() : c.text("sign in", 401)) }
 * }))
 * ```
 *
 * @since 0.3.0
 */
import type { Schema } from "effect"
import * as Catalog from "./Catalog.js"
import * as Internal from "./internal/integrations/hono.js"

/**
 * A stored route's handler: Hono's own `(c, next)`. `c.req.param()` holds the stored route's parameters.
 *
 * @since 0.3.0
 */
export type Handler = Internal.Handler

/**
 * A stored route's middleware: Hono's own `async (c, next)`; one that answers without calling `next` stops the chain.
 *
 * @since 0.3.0
 */
export type Middleware = Internal.Middleware

/**
 * A middleware taking a config: a stored route's middleware that also receives the route's config, decoded by the
 * schema it was registered with (`configured`), after the framework's own arguments.
 *
 * @since 0.5.0
 */
export type ConfiguredMiddleware<A> = Internal.ConfiguredMiddleware<A>

/**
 * A middleware registered with the schema of its config, for `middleware`: the router decodes each route's config
 * once per stored version of the route and hands the decoded value to `middleware` on every request; a config the
 * schema refuses answers the route `503 route_misconfigured` (and, with `catalog: true`, is refused on write).
 *
 * @since 0.5.0
 */
export const configured = <A, I>(
  config: Schema.Schema<A, I, never>,
  middleware: ConfiguredMiddleware<A>
): Catalog.Configured<ConfiguredMiddleware<any>> => Catalog.configured(config, middleware)

/**
 * `authenticator` (required), `store` (the in-memory store when omitted), `handlers` and `middleware` by name,
 * `catalog: true` to refuse routes naming functions not registered here, `telemetry`, `apiPrefix` (`"/admin"`: the
 * routing API at `/admin/v1/routing` while the stored routes serve at the mount) and the routing API's limits.
 *
 * @since 0.3.0
 */
export type Options = Internal.Options

/**
 * The Hono app, with `ready` and `close()` (Hono has no close of its own: call it when the server closes).
 *
 * @since 0.3.0
 */
export type Mounted = Internal.Mounted

/**
 * The registry for `app.route("/", routeRegistry(options))`, or `app.route("/admin", …)` under a path.
 *
 * @since 0.3.0
 */
export const routeRegistry: (options: Options) => Mounted = Internal.make

/**
 * The stored route that served a request (id, method, pattern) and its parameters (percent-decoded).
 *
 * @since 0.4.0
 */
export type Match = Internal.Match

/**
 * The stored route serving `c` and its parameters: in a handler or middleware, and in the host's middleware around the mount (after `await next()`); `undefined` for a request no stored route
 * served.
 *
 * @since 0.4.0
 */
export const matchOf: (typeof Internal)["matchOf"] = Internal.matchOf

export default routeRegistry
