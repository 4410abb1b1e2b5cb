/**
 * The integrations' `apiPrefix`: the path below the mount that the routing API is served under, while the stored
 * routes serve at the mount itself. Its check and the one rule that finds a request target below it.
 *
 * @internal
 */
import { Either } from "effect"
import { InvalidOption } from "../../InvalidOption.js"
import * as Path from "../route/path.js"

const EXAMPLE = "such as \"/admin\""
const STATIC_MARKS = "- . _ ~ ! $ & ' + , ; = @"

const invalid = (message: string) => new InvalidOption({ option: "apiPrefix", message })

/**
 * Why `value` is no usable `apiPrefix`, or `undefined` when it is one (or omitted): a path of the route grammar
 * (docs/http-api.md#route-rules) with static segments only and no percent-escape, neither `/` nor ending with `/`.
 */
export const check = (value: unknown): InvalidOption | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "string") return invalid(`apiPrefix must be a path ${EXAMPLE} (got ${typeof value})`)
  const quoted = JSON.stringify(value)
  const trimmed = value.replace(/\/+$/, "")
  if (trimmed === "") {
    return invalid(`apiPrefix ${quoted} is the mount's root: omit apiPrefix to serve the routing API there`)
  }
  if (trimmed !== value) return invalid(`apiPrefix ${quoted} must not end with "/": write ${JSON.stringify(trimmed)}`)
  const parsed = Path.parsePath(value)
  if (Either.isLeft(parsed)) {
    return invalid(
      `apiPrefix ${quoted} is not a valid path (${parsed.left[0]!.message}); write a static path ${EXAMPLE}`
    )
  }
  const escape = value.indexOf("%")
  if (escape !== -1) {
    return invalid(
      `apiPrefix ${quoted} has a percent-escape (${
        JSON.stringify(value.slice(escape, escape + 3))
      } at index ${escape}): ` +
        `Fastify and Hono match a path once decoded, so write it with plain characters (letters, digits, ${STATIC_MARKS})`
    )
  }
  const dynamic = parsed.right.segments.findIndex((segment) => segment._tag !== "Static")
  return dynamic === -1 ? undefined : invalid(
    `apiPrefix ${quoted} has a parameter or wildcard (${
      JSON.stringify(value.split("/")[dynamic + 1])
    }): it is matched as it is written, so write a static path ${EXAMPLE}`
  )
}

/** The usable `apiPrefix` of `value`, `""` (the mount's root) when it is omitted or refused by `check`. */
export const of = (value: unknown): string => check(value) === undefined && typeof value === "string" ? value : ""

/**
 * The request target below `prefix` (`/v1/routing?limit=2` for `/admin/v1/routing?limit=2` under `/admin`), or
 * `undefined` when its path is not below it: compared as the client sent it, as the routing API compares its own path.
 */
export const below = (prefix: string, target: string): string | undefined =>
  prefix === ""
    ? target
    : target.startsWith(prefix) && target.charCodeAt(prefix.length) === 47 /* / */
    ? target.slice(prefix.length)
    : undefined
