/**
 * The scopes the routing API checks, and what a prefix scope (`routes:write:/payments`) allows: one home for their
 * grammar, for configuration checks and for the HTTP core alike.
 *
 * @internal
 */
import { Either } from "effect"
import * as Route from "../../Route.js"
import { underPrefixes } from "../store/rules.js"

export const READ = "routes:read"
export const WRITE = "routes:write"
/** Naming oneself in the fleet and reporting to it (docs/scaling-out.md, "Who may report"), besides `READ`. */
export const REPORT = "fleet:report"
/** A prefix scope is this followed by the prefix. */
export const WRITE_PREFIX = "routes:write:"

/**
 * Why `prefix` cannot be owned, or `undefined`: a prefix is a valid path (docs/http-api.md) of static segments, other than
 * `/` (which would own every path: that is `routes:write`).
 */
export const checkPrefix = (prefix: string): string | undefined => {
  if (prefix === "/") return "the prefix / would own every path: use the scope routes:write instead"
  const parsed = Route.parsePath(prefix)
  if (Either.isLeft(parsed)) {
    return `the prefix ${JSON.stringify(prefix)} is not a valid path: ${parsed.left[0]!.message}`
  }
  return parsed.right.segments.every((segment) => segment._tag === "Static")
    ? undefined
    : `the prefix ${JSON.stringify(prefix)} has a parameter or wildcard: a prefix is made of static segments only, ` +
      "such as /payments or /api/orders"
}

/** Why `scope` is not one the routing API knows, or `undefined`: for scopes a host configures. */
export const checkScope = (scope: unknown): string | undefined => {
  if (typeof scope !== "string") return `is a ${scope === null ? "null" : typeof scope}, not a string`
  if (scope === READ || scope === WRITE || scope === REPORT) return undefined
  if (scope.startsWith(WRITE_PREFIX)) return checkPrefix(scope.slice(WRITE_PREFIX.length))
  return `${JSON.stringify(scope)} is not a scope of the routing API: use routes:read, routes:write, ` +
    "routes:write:<prefix> (such as routes:write:/payments) or fleet:report"
}

/** What a principal may write: every route (`"all"`), or the routes under these prefixes. */
export type WriteGrant = "all" | ReadonlyArray<string>

/**
 * What `scopes` allow writing, or `undefined` when nothing: `routes:write` allows every route, and each valid prefix
 * scope the routes under its prefix. A prefix scope that is not valid (one an identity provider sent) allows nothing.
 */
export const writeGrant = (scopes: ReadonlyArray<string>): WriteGrant | undefined => {
  if (scopes.includes(WRITE)) return "all"
  const prefixes = scopes.flatMap((scope) =>
    scope.startsWith(WRITE_PREFIX) && checkPrefix(scope.slice(WRITE_PREFIX.length)) === undefined
      ? [scope.slice(WRITE_PREFIX.length)]
      : []
  )
  return prefixes.length === 0 ? undefined : prefixes
}

/** `true` when `grant` allows writing a route with this `path`. */
export const allows = (grant: WriteGrant, path: string): boolean => grant === "all" || underPrefixes(grant, path)

/**
 * The narrowest scope that allows writing a route at `path`: the prefix scope of its leading static segments
 * (`/payments/:id` needs `routes:write:/payments`), or `routes:write` when its first segment is not static.
 */
export const neededScope = (path: string): string => {
  const parsed = Route.parsePath(path)
  if (Either.isLeft(parsed)) return WRITE
  const leading: Array<string> = []
  for (const segment of parsed.right.segments) {
    if (segment._tag !== "Static") break
    leading.push(segment.value)
  }
  return leading.length === 0 ? WRITE : `${WRITE_PREFIX}/${leading.join("/")}`
}
