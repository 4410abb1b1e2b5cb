/**
 * route-registry: store and serve route definitions from inside your Node host.
 *
 * The Postgres store (`route-registry/PgRouteRepository`) and the Node forms (`route-registry/AdminListener`,
 * `route-registry/RouterListener`) are left out of this entry point, so a host that uses none of them never loads them.
 *
 * @since 0.1.0
 */

/**
 * The admin API as an Effect `HttpApp` (before 0.4.0: `RoutingHttpApp`).
 *
 * @since 0.4.0
 */
export * as AdminHttpApp from "./AdminHttpApp.js"

/**
 * The admin API as a fetch-style handler (before 0.4.0: `WebHandler`).
 *
 * @since 0.4.0
 */
export * as AdminWebHandler from "./AdminWebHandler.js"

/**
 * @since 0.1.0
 */
export * as Authenticator from "./Authenticator.js"

/**
 * @since 0.2.0
 */
export * as Catalog from "./Catalog.js"

/**
 * @since 0.5.0
 */
export * as HostPaths from "./HostPaths.js"

/**
 * @since 0.2.0
 */
export * as InvalidOption from "./InvalidOption.js"

/**
 * @since 0.1.0
 */
export * as Problem from "./Problem.js"

/**
 * @since 0.1.0
 */
export * as Route from "./Route.js"

/**
 * A route's split (canary and A/B): its schema, and the bucket and handler a key gets.
 *
 * @since 0.5.0
 */
export * as Split from "./Split.js"

/**
 * A route's conditions (host, headers, query): their schema, canonical form and precedence.
 *
 * @since 0.5.0
 */
export * as When from "./When.js"

/**
 * @since 0.1.0
 */
export * as RouteRepository from "./RouteRepository.js"

/**
 * Following a registry over HTTP: a route table kept equal to another registry's through its change stream, with no
 * database; a follower serves the stream onward (a relay).
 *
 * @since 0.4.0
 */
export * as RouteFollower from "./RouteFollower.js"

/**
 * @since 0.2.0
 */
export * as RouteTable from "./RouteTable.js"

/**
 * @since 0.2.0
 */
export * as RouterHttpApp from "./RouterHttpApp.js"

/**
 * @since 0.1.0
 */
export * as RoutingApi from "./RoutingApi.js"

/**
 * @since 0.1.0
 */
export * as RoutingHandler from "./RoutingHandler.js"

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminHttpApp`
 */
export * as RoutingHttpApp from "./RoutingHttpApp.js"

/**
 * @since 0.3.0
 */
export * as Telemetry from "./Telemetry.js"

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminWebHandler`
 */
export * as WebHandler from "./WebHandler.js"
