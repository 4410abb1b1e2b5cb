/**
 * The listing query (docs/http-api.md, "Listing"): parsing it with every problem named, the opaque cursor, and the link to the next
 * page.
 *
 * @internal
 */
import { Either } from "effect"
import { type FieldIssue, isRouteId } from "../../Route.js"
import type { ListQuery } from "../../RouteRepository.js"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../limits.js"
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
  middleware: Grammar.checkName
} as const satisfies Record<string, (value: string) => string | undefined>

type Parameter = keyof typeof RULES

const PARAMETERS = Object.keys(RULES) as ReadonlyArray<Parameter>

const isParameter = (name: string): name is Parameter => Object.prototype.hasOwnProperty.call(RULES, name)

const unknownParameter = (name: string): string =>
  name === "access_token"
    ? "is not a parameter: tokens in the query never authenticate; send \"Authorization: Bearer <token>\""
    : `is not a parameter of this listing: use ${PARAMETERS.join(", ")}`

/**
 * The store query of a raw query string, decoded as `URLSearchParams` decodes it, or every problem found: a
 * parameter given twice, an unknown parameter, a value breaking its rule (up to `MAX_ISSUES` of them).
 */
export const parse = (raw: string): Either.Either<ListQuery, ReadonlyArray<FieldIssue>> => {
  const values: Partial<Record<Parameter, string>> = {}
  const issues: Array<FieldIssue> = []
  const reported = new Set<string>()
  for (const [name, value] of new URLSearchParams(raw)) {
    if (!isParameter(name)) {
      if (!reported.has(name)) issues.push({ path: name, message: unknownParameter(name) })
    } else if (values[name] !== undefined) {
      if (!reported.has(name)) issues.push({ path: name, message: "is given more than once: give it at most once" })
    } else {
      values[name] = value
      continue
    }
    reported.add(name)
  }
  for (const name of PARAMETERS) {
    const value = values[name]
    if (value === undefined || reported.has(name)) continue
    const problem = RULES[name](value)
    if (problem !== undefined) issues.push({ path: name, message: problem })
  }
  if (issues.length > 0) return Either.left(issues.slice(0, MAX_ISSUES))
  return Either.right({
    limit: values.limit === undefined ? DEFAULT_PAGE_SIZE : Number(values.limit),
    after: values.cursor === undefined ? undefined : decodeCursor(values.cursor),
    method: values.method,
    pathPrefix: values.pathPrefix,
    handler: values.handler,
    middleware: values.middleware
  })
}

/** The relative link to the page after `lastId`, with the filters and limit of `query`. */
export const nextLink = (collection: string, query: ListQuery, lastId: string): string => {
  const params = new URLSearchParams({ limit: String(query.limit) })
  if (query.method !== undefined) params.set("method", query.method)
  if (query.pathPrefix !== undefined) params.set("pathPrefix", query.pathPrefix)
  if (query.handler !== undefined) params.set("handler", query.handler)
  if (query.middleware !== undefined) params.set("middleware", query.middleware)
  params.set("cursor", encodeCursor(lastId))
  return `<${collection}?${params.toString()}>; rel="next"`
}
