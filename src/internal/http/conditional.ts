/**
 * Conditional requests (RFC 9110 §13) over a route's revision: its `ETag`, `If-Match` and `If-None-Match`.
 *
 * @internal
 */
import type { Precondition } from "../../RouteRepository.js"

/** The strong entity tag of a revision. */
export const etagOf = (revision: number): string => `"${revision}"`

// A revision as its tag prints it: decimal digits without leading zeros (strong comparison is byte for byte).
const REVISION = /^"(0|[1-9][0-9]{0,14})"$/

// The members of an entity-tag list (RFC 9110 §5.6.1), surrounding whitespace and empty members dropped.
const members = (header: string): Array<string> =>
  header.split(",").map((member) => member.trim()).filter((member) => member !== "")

/**
 * The precondition of an `If-Match` header: none without the header or with `*` (the change then needs only the
 * route to exist), else the revisions its strong tags name. A weak tag never matches under strong comparison, and an
 * unparseable member names nothing, so a header naming no revision fails against every route.
 */
export const ifMatch = (header: string | undefined): Precondition | undefined => {
  if (header === undefined) return undefined
  const tags = members(header)
  if (tags.length === 1 && tags[0] === "*") return undefined
  const revisions: Array<number> = []
  for (const tag of tags) {
    const match = REVISION.exec(tag)
    if (match !== null) revisions.push(Number(match[1]))
  }
  return { ifMatch: revisions }
}

/**
 * `true` when an `If-None-Match` header names the current revision, by weak comparison (`W/"3"` matches `"3"`), or is
 * `*` (the route exists).
 */
export const noneMatchHits = (header: string | undefined, revision: number): boolean => {
  if (header === undefined) return false
  const current = etagOf(revision)
  return members(header).some((tag) => tag === "*" || tag === current || tag === `W/${current}`)
}
