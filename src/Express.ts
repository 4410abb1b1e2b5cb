/**
 * The registry in an Express 5 (or 4) app: the routing API and the router over one store and one
 * table, mounted in one step, after the host's own routes and body parsers.
 *
 * @example
 * ```ts
 * import express from "express"
 * import { routeRegistry } from "route-registry/express"
 *
 * const app = express()
 * app.use(express.json())
 * app.use(routeRegistry({
 *   authenticator: Authenticator.layerStaticTokens(tokens),
 *   handlers: { showUser: (req, res) => void res.json({ id: req.params.id }) },
 *   middleware: { auth: (req, res, next) => (req.headers.authorization ? next() : void res.sendStatus(401)) }
 * }))
 * ```
 *
 * @since 0.3.0
 */
import type { Schema } from "effect"
import * as Catalog from "./Catalog.js"
import * as Internal from "./internal/integrations/express.js"

/**
 * A stored route's handler or middleware: Express's own `RequestHandler` `(req, res, next)`. `req.params` holds the
 * stored route's parameters, `req.body` what the host's body parsers made of the body.
 *
 * @since 0.3.0
 */
export type Handler = Internal.Handler

/**
 * A middleware taking a config: an Express `RequestHandler` that also receives the route's config, decoded by the
 * schema it was registered with (`configured`).
 *
 * @since 0.5.0
 */
export type ConfiguredHandler<A> = Internal.ConfiguredHandler<A>

/**
 * A middleware registered with the schema of its config, for `middleware`: the router decodes each route's config
 * once per stored version of the route and hands the decoded value to `middleware` on every request; a config the
 * schema refuses answers the route `503 route_misconfigured` (and, with `catalog: true`, is refused on write).
 *
 * @since 0.5.0
 */
export const configured = <A, I>(
  config: Schema.Schema<A, I, never>,
  middleware: ConfiguredHandler<A>
): Catalog.Configured<ConfiguredHandler<any>> => Catalog.configured(config, middleware)

/**
 * `authenticator` (required), `store` (the in-memory store when omitted), `handlers` and `middleware` by name,
 * `catalog: true` to refuse routes naming functions not registered here, `telemetry`, `apiPrefix` (`"/admin"`: the
 * routing API at `/admin/v1/routing` while the stored routes serve at the mount) and the routing API's limits.
 *
 * @since 0.3.0
 */
export type Options = Internal.Options

/**
 * What `app.use` takes: the registry and the error handler beside it. The server's close releases its store and
 * table, as does `close()`.
 *
 * @since 0.3.0
 */
export type Mounted = Internal.Mounted

/**
 * The registry for `app.use(routeRegistry(options))`, or `app.use("/admin", routeRegistry(options))` under a path.
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
 * The stored route serving `req` and its parameters: in a handler or middleware, and in the host's code that runs after it (`res.on("finish", () => matchOf(req))`); `undefined` for a request no stored route
 * served.
 *
 * @since 0.4.0
 */
export const matchOf: (typeof Internal)["matchOf"] = Internal.matchOf

export default routeRegistry
