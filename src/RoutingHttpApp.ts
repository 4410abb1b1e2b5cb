/**
 * The admin API as an Effect `HttpApp`, under its name before 0.4.0: every export is `AdminHttpApp`'s, which names
 * the admin API apart from the router's `RouterHttpApp`.
 *
 * @since 0.1.0
 * @deprecated since 0.4.0: use `route-registry/AdminHttpApp`
 */
import * as AdminHttpApp from "./AdminHttpApp.js"

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminHttpApp.Options`
 */
export type Options = AdminHttpApp.Options

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminHttpApp.AdminApp`
 */
export type RoutingApp = AdminHttpApp.AdminApp

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminHttpApp.make`
 */
export const make = AdminHttpApp.make

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminHttpApp.router`
 */
export const router = AdminHttpApp.router
