/**
 * The request target as the routing API reads it, through the one request-path parser the route table uses too.
 *
 * @internal
 */
import * as RequestPath from "../table/requestPath.js"

/**
 * The path of a request target, without its query; absolute-form targets (RFC 9112 §3.2.2) included. A target with
 * no path (`*`) is given as it is: it names nothing the API serves.
 */
export const pathOf = (target: string): string => RequestPath.pathOf(target) ?? target

/**
 * The path a host mounted the API under: what a router (Express, Connect, Effect's `HttpRouter.mount`) cut from the
 * front of the request's path, found by comparing the target it received (`originalUrl`) with the one it passed on.
 * `""` when nothing was cut.
 */
export const baseOf = (originalUrl: unknown, url: string): string => {
  if (typeof originalUrl !== "string" || originalUrl === url) return ""
  const original = pathOf(originalUrl)
  const rest = pathOf(url)
  return original.length > rest.length && original.endsWith(rest)
    ? original.slice(0, original.length - rest.length)
    : ""
}
