/**
 * The paths a host serves itself, before the stored routes (`/docs`, `/healthz`, `/static/*`): declared to the library,
 * no stored route may take them (a create, update or restore onto one is refused with `400 invalid_route`, as
 * `/v1/routing` is), `GET /v1/routing/match` answers them as served by the host, and the routers hand them back to the
 * host. One declaration, `layer`, is read by the routing API and the routers built where it is provided, so that the
 * API refuses exactly what the router would never serve; the framework integrations take it as their `hostPaths`
 * option. docs/router.md says more.
 *
 * @since 0.5.0
 */
import { Context, Either, Layer } from "effect"
import { underPrefixes } from "./internal/store/rules.js"
import * as Node from "./internal/table/node.js"
import * as RequestPath from "./internal/table/requestPath.js"
import { InvalidOption } from "./InvalidOption.js"
import * as Route from "./Route.js"
import * as RouteTable from "./RouteTable.js"

/** An entry that ends with this stands for its path and every path below it (`/static/*`). */
const BELOW = "/*"

/**
 * The paths of a host, compiled: each entry as declared, the exact paths, and the paths served with everything below.
 *
 * @since 0.5.0
 */
export interface Paths {
  readonly entries: ReadonlyArray<string>
  readonly exact: ReadonlySet<string>
  readonly below: ReadonlyArray<string>
  /** The lengths of the exact paths: most requests are told apart by their path's length alone. */
  readonly lengths: ReadonlySet<number>
}

/**
 * No path: the default.
 *
 * @since 0.5.0
 */
export const none: Paths = { entries: [], exact: new Set(), below: [], lengths: new Set() }

/**
 * The paths the host in context serves itself; `none` (the default) when it declared none.
 *
 * @since 0.5.0
 */
export class HostPaths extends Context.Reference<HostPaths>()("route-registry/HostPaths", {
  defaultValue: (): Paths => none
}) {}

// Why `entry` cannot be declared, or undefined: a path of the route grammar made of static segments, optionally
// followed by "/*".
const checkEntry = (entry: unknown): string | undefined => {
  if (typeof entry !== "string") return `is a ${entry === null ? "null" : typeof entry}, not a path such as "/docs"`
  const path = entry.endsWith(BELOW) ? entry.slice(0, -BELOW.length) : entry
  if (path === "" && entry === BELOW) return "\"/*\" would take every path from the stored routes: name the paths"
  const parsed = Route.parsePath(path)
  if (Either.isLeft(parsed)) return `${JSON.stringify(entry)} is not a valid path: ${parsed.left[0]!.message}`
  return parsed.right.segments.every((segment) => segment._tag === "Static")
    ? undefined
    : `${JSON.stringify(entry)} has a parameter or wildcard: declare static paths such as "/docs", or a path and ` +
      "everything below it such as \"/static/*\""
}

/**
 * The first entry of `paths` that cannot be declared, as an `InvalidOption` naming it; `undefined` when all can. An
 * entry is a path of static segments (`/docs`, `/openapi.json`), or one followed by `/*` for the path and every path
 * below it (`/static/*`).
 *
 * @since 0.5.0
 */
export const check = (paths: ReadonlyArray<string>, option = "hostPaths"): InvalidOption | undefined => {
  if (!Array.isArray(paths)) return new InvalidOption({ option, message: `${option} must be an array of paths` })
  for (let i = 0; i < paths.length; i++) {
    const problem = checkEntry(paths[i])
    if (problem !== undefined) {
      return new InvalidOption({ option: `${option}[${i}]`, message: `${option}[${i}] ${problem}` })
    }
  }
  return undefined
}

/**
 * `paths` compiled; throws the `InvalidOption` of `check` when an entry cannot be declared.
 *
 * @since 0.5.0
 */
export const make = (paths: ReadonlyArray<string>): Paths => {
  const invalid = check(paths)
  if (invalid !== undefined) throw invalid
  const exact = paths.filter((entry) => !entry.endsWith(BELOW))
  return {
    entries: [...paths],
    exact: new Set(exact),
    below: paths.filter((entry) => entry.endsWith(BELOW)).map((entry) => entry.slice(0, -BELOW.length)),
    lengths: new Set(exact.map((entry) => entry.length))
  }
}

/**
 * Declares the paths the host serves itself, for the routing API and the routers built with it; fails with the
 * `InvalidOption` of `check` when an entry cannot be declared.
 *
 * @since 0.5.0
 */
export const layer = (paths: ReadonlyArray<string>): Layer.Layer<never, InvalidOption> => {
  const invalid = check(paths)
  return invalid === undefined ? Layer.succeed(HostPaths, make(paths)) : Layer.fail(invalid)
}

// The entry as declared that takes `path` (a stored route's pattern or a normalised request path), or undefined.
const entryOf = (paths: Paths, path: string): string | undefined => {
  if (paths.exact.has(path)) return path
  for (const prefix of paths.below) if (underPrefixes([prefix], path)) return prefix + BELOW
  return undefined
}

// `false` when the request target surely is no declared path, told at the cost of a scan for `?`: a plain target (no
// percent-escape, which normalising could shorten) whose path has the length of no exact entry, when none is `/*`.
const mayServe = (paths: Paths, target: string): boolean => {
  if (paths.below.length > 0 || target.charCodeAt(0) !== 47 /* / */) return true
  const query = target.indexOf("?")
  const end = query === -1 ? target.length : query
  return paths.lengths.has(end) || target.lastIndexOf("%", end) !== -1
}

/**
 * The entry of `paths` that takes a stored route's `path` (a pattern equal to an exact entry, or the path of an
 * entry with `/*` or below it), or `undefined` when the route may have it.
 *
 * @since 0.5.0
 */
export const taking = (paths: Paths, path: string): string | undefined =>
  paths.entries.length === 0 ? undefined : entryOf(paths, path)

/**
 * The entry of `paths` that serves a request to `target` (its path normalised as the route table normalises it), or
 * `undefined` when the stored routes decide.
 *
 * @since 0.5.0
 */
export const serving = (paths: Paths, target: string): string | undefined => {
  if (paths.entries.length === 0) return undefined
  const path = RequestPath.pathOf(target)
  const normal = path === undefined ? undefined : RequestPath.normalise(path)
  return typeof normal === "string" ? entryOf(paths, normal) : undefined
}

/**
 * What a router decides for a request: `RouteTable.lookup`, except that a path the host serves is not found (the
 * router hands it back to the host). Costs nothing more when the host declared no path.
 *
 * @since 0.5.0
 */
export const lookup = <R extends Route.Route>(
  paths: Paths,
  table: RouteTable.Table<R>,
  method: string,
  target: string,
  headers?: RouteTable.Headers
): RouteTable.Resolution<R> =>
  paths.entries.length === 0 || !mayServe(paths, target) || serving(paths, target) === undefined
    ? RouteTable.lookup(table, method, target, headers)
    : Node.notFound

/**
 * Why a stored route may not have `path`, which `entry` takes: a sentence naming both.
 *
 * @since 0.5.0
 */
export const taken = (path: string, entry: string): string =>
  `${JSON.stringify(path)} is a path this host serves itself (it declares ${JSON.stringify(entry)}${
    entry.endsWith(BELOW) ? ", that path and every path below it" : ""
  }): the host answers it before any stored route, so no stored route may take it; choose another path`
