/**
 * The listing query (docs/http-api.md, "Listing"): parsing it with every problem named, the opaque cursor, and the link to the next
 * page.
 *
 * @internal
 */
import { Either } from "effect"
import { type FieldIssue, isRouteId } from "../../Route.js"
import type { ListQuery } from "../../RouteRepository.js"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MAX_SEARCH_LENGTH } from "../limits.js"
import { TAG_PATTERN } from "../route/fields.js"
import * as Grammar from "../route/grammar.js"
import { MAX_ISSUES } from "../route/validate.js"

/** The query string of a request target, without the `?` (empty when there is none). */
export const queryOf = (target: string): string => {
  const mark = target.indexOf("?")
  return mark === -1 ? "" : target.slice(mark + 1)
}

// The cursor is the last id of a page in base64url, without padding: opaque to clients, cheap to check.
export const encodeCursor = (id: string): string => btoa(id).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")

const BASE64URL = /^[A-Za-z0-9_-]+$/

const decodeCursor = (cursor: string): string | undefined => {
  if (!BASE64URL.test(cursor) || cursor.length % 4 === 1) return undefined
  const id = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"))
  return isRouteId(id) && encodeCursor(id) === cursor ? id : undefined
}

const checkLimit = (value: string): string | undefined =>
  /^[0-9]+$/.test(value) && Number(value) >= 1 && Number(value) <= MAX_PAGE_SIZE
    ? undefined
    : `must be a whole number from 1 to ${MAX_PAGE_SIZE} in decimal digits (got ${JSON.stringify(value)})`

const checkPathPrefix = (value: string): string | undefined =>
  value.charCodeAt(0) !== 47 /* / */
    ? `must start with "/" (got ${JSON.stringify(value)})`
    : value.length > Grammar.MAX_PATH_LENGTH
    ? `must be at most ${Grammar.MAX_PATH_LENGTH} characters, as a path is (got ${value.length})`
    : undefined

// Each parameter's rule: the problem with its value, or undefined.
const RULES = {
  limit: checkLimit,
  cursor: (value: string) =>
    decodeCursor(value) === undefined
      ? "is not a cursor this API issued: pass the nextCursor of a previous page unchanged"
      : undefined,
  method: Grammar.checkMethod,
  pathPrefix: checkPathPrefix,
  handler: Grammar.checkName,
  middleware: Grammar.checkName,
  q: (value: string) =>
    value.length >= 1 && value.length <= MAX_SEARCH_LENGTH
      ? undefined
      : `must be 1 to ${MAX_SEARCH_LENGTH} characters (got ${value.length})`,
  enabled: (value: string) =>
    value === "true" || value === "false"
      ? undefined
      : `must be true or false (got ${JSON.stringify(value)}): enabled=false lists the disabled routes`,
  tag: (value: string) =>
    TAG_PATTERN.test(value)
      ? undefined
      : `is not a tag (got ${JSON.stringify(value.slice(0, 80))}): 1–64 of lowercase letters, digits and . _ : / -, ` +
        "starting with a letter or digit"
} as const satisfies Record<string, (value: string) => string | undefined>

type Rules<P extends string> = Readonly<Record<P, (value: string) => string | undefined>>

const unknownParameter = (name: string, of: string, names: ReadonlyArray<string>): string =>
  name === "access_token"
    ? "is not a parameter: tokens in the query never authenticate; send \"Authorization: Bearer <token>\""
    : `is not a parameter of ${of}: use ${names.join(", ")}`

/**
 * The values of a raw query string's parameters, decoded as `URLSearchParams` decodes them, each checked by its rule
 * in `rules`; or every problem found: a parameter given twice, one not in `rules` (`of` names what the parameters
 * belong to, "this listing"), a value breaking its rule (up to `MAX_ISSUES` of them).
 */
export const parseParameters = <P extends string>(
  raw: string,
  rules: Rules<P>,
  of: string
): Either.Either<Partial<Record<P, string>>, ReadonlyArray<FieldIssue>> => {
  const values: Partial<Record<P, string>> = {}
  const issues: Array<FieldIssue> = []
  const reported = new Set<string>()
  for (const [name, value] of new URLSearchParams(raw)) {
    if (!Object.prototype.hasOwnProperty.call(rules, name)) {
      if (!reported.has(name)) issues.push({ path: name, message: unknownParameter(name, of, Object.keys(rules)) })
    } else if (values[name as P] !== undefined) {
      if (!reported.has(name)) issues.push({ path: name, message: "is given more than once: give it at most once" })
    } else {
      values[name as P] = value
      continue
    }
    reported.add(name)
  }
  for (const name in rules) {
    const value = values[name]
    if (value === undefined || reported.has(name)) continue
    const problem = rules[name](value)
    if (problem !== undefined) issues.push({ path: name, message: problem })
  }
  return issues.length > 0 ? Either.left(issues.slice(0, MAX_ISSUES)) : Either.right(values)
}

/**
 * The store query of a raw query string, or every problem found (see `parseParameters`).
 */
export const parse = (raw: string): Either.Either<ListQuery, ReadonlyArray<FieldIssue>> =>
  Either.map(parseParameters(raw, RULES, "this listing"), (values) => ({
    limit: values.limit === undefined ? DEFAULT_PAGE_SIZE : Number(values.limit),
    after: values.cursor === undefined ? undefined : decodeCursor(values.cursor),
    method: values.method,
    pathPrefix: values.pathPrefix,
    handler: values.handler,
    middleware: values.middleware,
    q: values.q,
    enabled: values.enabled === undefined ? undefined : values.enabled === "true",
    tag: values.tag
  }))

/** The relative link to the page after `lastId`, with the filters and limit of `query`. */
export const nextLink = (collection: string, query: ListQuery, lastId: string): string => {
  const params = new URLSearchParams({ limit: String(query.limit) })
  if (query.method !== undefined) params.set("method", query.method)
  if (query.pathPrefix !== undefined) params.set("pathPrefix", query.pathPrefix)
  if (query.handler !== undefined) params.set("handler", query.handler)
  if (query.middleware !== undefined) params.set("middleware", query.middleware)
  if (query.q !== undefined) params.set("q", query.q)
  if (query.enabled !== undefined) params.set("enabled", String(query.enabled))
  if (query.tag !== undefined) params.set("tag", query.tag)
  params.set("cursor", encodeCursor(lastId))
  return `<${collection}?${params.toString()}>; rel="next"`
}
