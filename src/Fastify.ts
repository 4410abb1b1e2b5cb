/**
 * The registry as a Fastify 5 plugin: the routing API and the router over one store and one table,
 * mounted in one step.
 *
 * @example
 * ```ts
 * import Fastify from "fastify"
 * import routeRegistry from "route-registry/fastify"
 *
 * const app = Fastify({ logger: true })
 * await app.register(routeRegistry, {
 *   authenticator: Authenticator.layerStaticTokens(tokens),
 *   handlers: { showUser: async (request) => ({ id: (request.params as { id: string }).id }) },
 *   middleware: { auth: async (request, reply) => { if (!request.headers.authorization) reply.code(401).send() } }
 * })
 * ```
 *
 * @since 0.3.0
 */
import type { Schema } from "effect"
import type { FastifyPluginAsync } from "fastify"
import * as Catalog from "./Catalog.js"
import * as Internal from "./internal/integrations/fastify.js"

/**
 * A stored route's handler: Fastify's own route handler `(request, reply)`. `request.params` holds the stored
 * route's parameters, `request.body` what Fastify's content-type parsers made of the body.
 *
 * @since 0.3.0
 */
export type Handler = Internal.Handler

/**
 * A stored route's middleware: a Fastify pre-handler `(request, reply, done)` or `async (request, reply)`. One that
 * sends a reply stops the chain.
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

const plugin: FastifyPluginAsync<Options> = Internal.plugin

// Fastify's plugin metadata (what `fastify-plugin` would set), without `skip-override`: the plugin keeps its own
// encapsulated context, so its content-type parser changes and its wildcard route never reach the host's routes.
Object.assign(plugin, {
  [Symbol.for("fastify.display-name")]: "route-registry",
  [Symbol.for("plugin-meta")]: { name: "route-registry", fastify: "5.x" }
})

/**
 * The plugin: `await app.register(routeRegistry, options)`, with Fastify's `prefix` to mount it under a path.
 * `app.close()` releases its store and table.
 *
 * @since 0.3.0
 */
export const routeRegistry: FastifyPluginAsync<Options> = plugin

/**
 * The stored route that served a request (id, method, pattern) and its parameters (percent-decoded).
 *
 * @since 0.4.0
 */
export type Match = Internal.Match

/**
 * The stored route serving `request` and its parameters: in a handler or middleware, and in the host's hooks that run after the match (`onResponse`); `undefined` for a request no stored route
 * served.
 *
 * @since 0.4.0
 */
export const matchOf: (typeof Internal)["matchOf"] = Internal.matchOf

export default routeRegistry
