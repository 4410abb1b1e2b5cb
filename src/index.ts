/**
 * route-registry: store and serve route definitions from inside your Node host.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as Route from "./Route.js"

/**
 * @since 0.1.0
 */
export * as RouteRepository from "./RouteRepository.js"
