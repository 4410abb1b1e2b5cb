/**
 * The admin API as a Node request listener, under its name before 0.4.0: every export is `AdminListener`'s, which
 * names the admin API apart from the router's forms (`RouterListener`).
 *
 * @since 0.1.0
 * @deprecated since 0.4.0: use `route-registry/AdminListener`
 */
import * as AdminListener from "./AdminListener.js"

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminListener.Listener`
 */
export type Listener = AdminListener.Listener

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminListener.DisposableListener`
 */
export type DisposableListener = AdminListener.DisposableListener

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminListener.Options`
 */
export type Options = AdminListener.Options

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminListener.make`
 */
export const make = AdminListener.make

/**
 * @since 0.1.0
 * @deprecated since 0.4.0: use `AdminListener.fromLayer`
 */
export const fromLayer = AdminListener.fromLayer
