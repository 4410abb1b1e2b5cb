/**
 * The admin API as a fetch-style handler, under its name before 0.4.0: every export is `AdminWebHandler`'s, which
 * names the admin API apart from the router's forms.
 *
 * @since 0.1.0
 * @deprecated since 0.4.0: use `route-registry/AdminWebHandler`
 */
import * as AdminWebHandler from "./AdminWebHandler.js"

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminWebHandler.Handler`
 */
export type Handler = AdminWebHandler.Handler

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminWebHandler.DisposableHandler`
 */
export type DisposableHandler = AdminWebHandler.DisposableHandler

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminWebHandler.Options`
 */
export type Options = AdminWebHandler.Options

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminWebHandler.make`
 */
export const make = AdminWebHandler.make

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminWebHandler.fromLayer`
 */
export const fromLayer = AdminWebHandler.fromLayer
