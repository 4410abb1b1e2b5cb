/**
 * The router as a Node request listener, under its name before 0.4.0: every export is `RouterListener`'s, which
 * names the router's forms apart from the admin API's (`AdminListener`).
 *
 * @since 0.2.0
 * @deprecated since 0.4.0: use `route-registry/RouterListener`
 */
import * as RouterListener from "./RouterListener.js"

/**
 * @since 0.2.0
 * @deprecated since 0.4.0: use `RouterListener.RouteFunction`
 */
export type RouteFunction = RouterListener.RouteFunction

/**
 * @since 0.2.0
 * @deprecated since 0.4.0: use `RouterListener.Functions`
 */
export type Functions = RouterListener.Functions

/**
 * @since 0.2.0
 * @deprecated since 0.4.0: use `RouterListener.Match`
 */
export type Match = RouterListener.Match

/**
 * @since 0.2.0
 * @deprecated since 0.4.0: use `RouterListener.Listener`
 */
export type Listener = RouterListener.Listener

/**
 * @since 0.2.0
 * @deprecated since 0.4.0: use `RouterListener.DisposableListener`
 */
export type DisposableListener = RouterListener.DisposableListener

/**
 * @since 0.2.0
 * @deprecated since 0.4.0: use `RouterListener.Options`
 */
export type Options = RouterListener.Options

/**
 * @since 0.2.0
 * @deprecated since 0.4.0: use `RouterListener.matchOf`
 */
export const matchOf = RouterListener.matchOf

/**
 * @since 0.2.0
 * @deprecated since 0.4.0: use `RouterListener.make`
 */
export const make = RouterListener.make

/**
 * @since 0.2.0
 * @deprecated since 0.4.0: use `RouterListener.fromLayer`
 */
export const fromLayer = RouterListener.fromLayer
