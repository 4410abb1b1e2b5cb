/**
 * The whole routes API on bare `node:http`, written for speed as a performance-minded engineer would: the yardstick
 * the library is measured against. Every answer that does not depend on the request is prepared once, headers and
 * length included; a stored route keeps its JSON, ETag and response head from the moment it is written; the bearer
 * token is compared in constant time with pre-encoded tokens, without hashing or allocating; the store is a few `Map`s
 * and sorted id lists, and the change log an array of entries that hold the stored routes themselves (rendered only
 * when read), found by revision with arithmetic. It answers what the library answers: the same problem documents,
 * headers and status lines, `Registry-Revision` on every write, history, restore, dry runs and the listing's `q`.
 *
 * It keeps the whole route: the fields of docs/router.md (enabled, split, description, tags, middleware configs and
 * conditions) are stored, answered, patched, listed (`tag`, `enabled`, `q`), logged and restored as the library
 * does, and conditions take part in conflicts; a route without them costs a few comparisons more.
 *
 * Out of its scope, as a registry's rather than the routes API's: prefix-owner tokens (`routes:write:<prefix>`),
 * `GET /v1/routing/match` (the router's), the fleet, the change stream, `Idempotency-Key` and change sets;
 * docs/performance.md says so.
 *
 * Its store, answers, token check and query parsing are exported for the plain Fastify peer, which serves the same
 * contract through Fastify's own machinery.
 */
import { Context, Effect, Either, Exit, Metric, MetricBoundaries, MetricLabel, Option } from "effect"
import { isUtf8 } from "node:buffer"
import * as Http from "node:http"
import type { Scope } from "route-registry/Authenticator"
import * as Problem from "route-registry/Problem"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import type { HistoryQuery, ListQuery } from "route-registry/RouteRepository"
import * as RoutingHandler from "route-registry/RoutingHandler"
import type * as When from "route-registry/When"
import type { Answer, Created, Options, RouteRecord, Started, Token, TooManyMethods } from "./shared.js"
import {
  closeServer,
  COLLECTION,
  COLLECTION_ALLOW,
  conflictKey,
  DEFAULT_BODY_TIMEOUT_MILLIS,
  DEFAULT_MAX_BODY_BYTES,
  EMPTY_BODY,
  fieldsJson,
  INCOMPLETE_BODY,
  ITEM_PREFIX,
  listen,
  malformedJson,
  methodNotAllowed,
  ROUTE_ALLOW,
  routeConflict,
  routeNotFound,
  runMain,
  seedSync,
  timedOut,
  tooLarge,
  UNAUTHENTICATED
} from "./shared.js"

const JSON_TYPE = "application/json"

// ---------------------------------------------------------------------------------------------------------------
// Answers: the library's problem documents (those shared.ts lacks), each ready to write
// ---------------------------------------------------------------------------------------------------------------

/** An answer with its head as `writeHead` takes it: the status line's phrase and a flat list of header lines. */
export interface Prepared extends Answer {
  readonly phrase: string | undefined
  readonly head: Array<string>
  /** It closes the connection (413, 408): the rest of an unread body is discarded first. */
  readonly close: boolean
}

/** Ready to write; a problem's status line says its title, as its body does (and as the library's does). */
export const prepare = (answer: Answer): Prepared => {
  const head: Array<string> = []
  for (const name in answer.headers) head.push(name, answer.headers[name]!)
  head.push("content-length", String(Buffer.byteLength(answer.body)))
  return { ...answer, phrase: Problem.titles[answer.status], head, close: answer.headers.connection === "close" }
}

const problem = (
  code: Problem.Code,
  detail: string,
  headers?: Record<string, string>,
  extensions?: Pick<Problem.Problem, "errors" | "conflictingRouteId">
): Prepared =>
  prepare({
    status: Problem.codes[code],
    headers: { "content-type": Problem.CONTENT_TYPE, ...headers },
    body: JSON.stringify(Problem.make(code, detail, extensions))
  })

const REALM = "Bearer realm=\"routing\""
const challenge = (code: "invalid_request" | "invalid_token", detail: string) =>
  problem(code, detail, { "www-authenticate": `${REALM}, error="${code}"` })
const insufficientScope = (scope: Scope, action: string) =>
  problem(
    "insufficient_scope",
    `This token lacks the ${scope} scope needed to ${action}: use a token that has it.`,
    { "www-authenticate": `${REALM}, error="insufficient_scope", scope="${scope}"` }
  )

const NO_TOKEN = prepare(UNAUTHENTICATED)
const EMPTY_CREDENTIAL = challenge(
  "invalid_request",
  "The Authorization header names the Bearer scheme but carries no token: send \"Authorization: Bearer <token>\"."
)
const MALFORMED_CREDENTIAL = challenge(
  "invalid_request",
  "The bearer token is malformed: a token is letters, digits and - . _ ~ + / optionally followed by \"=\" padding."
)
const SEVERAL_CREDENTIALS = challenge(
  "invalid_request",
  "The request carries more than one Authorization credential: send exactly one \"Authorization: Bearer <token>\"."
)
const INVALID_TOKEN = challenge(
  "invalid_token",
  "The bearer token is not accepted: check that it is a configured token and has not expired or been revoked."
)
const READ_SCOPE = insufficientScope("routes:read", "read routes")
const WRITE_SCOPE = insufficientScope("routes:write", "create, update or delete routes")

/** The answer outside `/v1/routing` of a server with no host around it. */
export const NOT_FOUND = problem(
  "not_found",
  "Nothing is served at this path: the routing API lives under /v1/routing."
)

/** The media types a body may be sent as, as a refusal names them. */
export const CREATE_TYPES = "application/json"
export const PATCH_TYPES = "application/json\" or \"Content-Type: application/merge-patch+json"

export const unsupportedMediaType = (got: string | undefined, accepted: string): Prepared =>
  problem(
    "unsupported_media_type",
    `Send the body as JSON with "Content-Type: ${accepted}" (got ${
      got === undefined ? "no Content-Type" : JSON.stringify(got)
    }).`
  )

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`
// A full list may not be all the problems: the validators stop at MAX_ISSUES.
const countOf = (errors: ReadonlyArray<Route.FieldIssue>, word: string) =>
  errors.length >= Route.MAX_ISSUES
    ? `at least ${plural(Route.MAX_ISSUES, word)}; the first ${Route.MAX_ISSUES} are listed in "errors"`
    : `${plural(errors.length, word)}: see "errors" for each one`

export const invalidRoute = (errors: ReadonlyArray<Route.FieldIssue>): Prepared =>
  problem("invalid_route", `The route definition breaks ${countOf(errors, "rule")}.`, undefined, { errors })

export const invalidQuery = (errors: ReadonlyArray<Route.FieldIssue>): Prepared =>
  problem("invalid_query", `The listing query has ${countOf(errors, "problem")}.`, undefined, { errors })

// The library's own sentence is kept in its answers; its description of the code says as much.
export const tooManyMethods = (): Prepared => problem("too_many_methods", Problem.descriptions.too_many_methods)

export const preconditionFailed = (id: string): Prepared =>
  problem(
    "precondition_failed",
    `Route ${id} has changed since the version If-Match names, and nothing was changed: get it again and retry with its current ETag.`
  )

/** The parsed JSON of a body, or the answer refusing it (empty, not UTF-8, not JSON). */
export const parseJson = (body: Buffer): { readonly json: unknown } | { readonly refused: Answer } => {
  if (body.length === 0) return { refused: EMPTY_BODY }
  if (!isUtf8(body)) return { refused: malformedJson("the body is not UTF-8 text") }
  try {
    return { json: JSON.parse(body.toString("utf8")) }
  } catch (error) {
    return { refused: malformedJson((error as Error).message) }
  }
}

// `application/json` (or, for a patch, `application/merge-patch+json`) with any parameters, but no charset other than
// UTF-8: bodies are read as UTF-8.
const accepts = (contentType: string | undefined, patch: boolean): boolean => {
  if (contentType === undefined) return false
  const semicolon = contentType.indexOf(";")
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase()
  if (type !== JSON_TYPE && !(patch && type === "application/merge-patch+json")) return false
  if (semicolon === -1) return true
  const charset = /(?:^|;)\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType.slice(semicolon))
  return charset === null || /^utf-?8$/i.test(charset[1]!)
}

export const acceptsCreate = (contentType: string | undefined): boolean =>
  contentType === JSON_TYPE || accepts(contentType, false)
export const acceptsPatch = (contentType: string | undefined): boolean =>
  contentType === JSON_TYPE || accepts(contentType, true)

// ---------------------------------------------------------------------------------------------------------------
// Bearer tokens: compared in constant time, without hashing or allocating
// ---------------------------------------------------------------------------------------------------------------

/**
 * The `Authorization` header as the contract reads it: several lines joined by ", ", so two credentials are seen and
 * refused. Node's `req.headers` keeps only the first line, so the header is read from `rawHeaders`.
 */
export const authorizationOf = (req: Http.IncomingMessage): string | undefined => {
  const raw = req.rawHeaders
  let value: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    if (
      name.length === 13 &&
      (name === "Authorization" || name === "authorization" || name.toLowerCase() === "authorization")
    ) value = value === undefined ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`
  }
  return value
}

// RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const TOKEN_CHARS = new Uint8Array(128)
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/") TOKEN_CHARS[c.charCodeAt(0)] = 1
const isTokenChar = (c: number) => c < 128 && TOKEN_CHARS[c] === 1
const isOws = (c: number) => c === 32 || c === 9
const BEARER = [98, 101, 97, 114, 101, 114] // "bearer"
// A comma followed by `scheme SP` starts a second credential; inside one credential a comma precedes an auth-param.
const SECOND_CREDENTIAL = /,[ \t]*[!#$%&'*+.^_`|~0-9A-Za-z-]+(?: |$)/

/** The holder of a configured token, as a request that passes the check is answered: its id names it in the log. */
export class Principal {
  constructor(
    readonly id: string | null,
    readonly codes: Uint16Array,
    readonly read: boolean,
    readonly write: boolean
  ) {}
}

/**
 * Checks an `Authorization` header against the configured tokens and the scope a request needs: the refusal, or the
 * token's `Principal` to let the request through (one object per token, made once). The presented token is compared
 * with every configured token, char by char with no early exit, so the time taken depends on the presented token's
 * length only.
 */
export const makeAuthorizer = (tokens: ReadonlyArray<Token>) => {
  const entries = tokens.filter((entry) => entry.token !== "").map((entry) =>
    new Principal(
      entry.id ?? null,
      Uint16Array.from(entry.token, (c) => c.charCodeAt(0)),
      entry.scopes.includes("routes:read"),
      entry.scopes.includes("routes:write")
    )
  )
  return (header: string | undefined, scope: Scope): Prepared | Principal => {
    if (header === undefined) return NO_TOKEN
    let start = 0
    let end = header.length
    while (start < end && isOws(header.charCodeAt(start))) start++
    while (end > start && isOws(header.charCodeAt(end - 1))) end--
    const comma = header.indexOf(",", start)
    if (comma !== -1 && comma < end && SECOND_CREDENTIAL.test(header.slice(start, end))) return SEVERAL_CREDENTIALS
    const space = header.indexOf(" ", start)
    const schemeEnd = space === -1 || space >= end ? end : space
    // The scheme name is case-insensitive (RFC 9110 §11.1): OR-ing 0x20 lowercases exactly the letters of "BEARER".
    if (schemeEnd - start !== 6) return NO_TOKEN
    for (let i = 0; i < 6; i++) if ((header.charCodeAt(start + i) | 0x20) !== BEARER[i]) return NO_TOKEN
    let from = schemeEnd + 1
    while (from < end && header.charCodeAt(from) === 32) from++
    if (from >= end) return EMPTY_CREDENTIAL
    let at = from
    while (at < end && isTokenChar(header.charCodeAt(at))) at++
    if (at === from) return MALFORMED_CREDENTIAL
    while (at < end && header.charCodeAt(at) === 61 /* = */) at++
    if (at !== end) return MALFORMED_CREDENTIAL
    const length = end - from
    let found: Principal | undefined
    for (let e = 0; e < entries.length; e++) {
      const entry = entries[e]!
      const codes = entry.codes
      let difference = length ^ codes.length
      for (let i = 0; i < length; i++) difference |= header.charCodeAt(from + i) ^ codes[i % codes.length]!
      if (difference === 0 && found === undefined) found = entry
    }
    if (found === undefined) return INVALID_TOKEN
    if (scope === "routes:write") return found.write ? found : WRITE_SCOPE
    return found.read ? found : READ_SCOPE
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Versions (ETag): a route's tag is its revision, a store-wide counter of changes
// ---------------------------------------------------------------------------------------------------------------

// The members of an entity-tag list (RFC 9110 §5.6.1), empty members dropped.
const members = (header: string): Array<string> =>
  header.split(",").map((member) => member.trim()).filter((member) => member !== "")

/** The tags an `If-Match` header accepts; `undefined` (any version will do) without the header or with `*`. */
export const ifMatch = (header: string | undefined): ReadonlyArray<string> | undefined => {
  if (header === undefined) return undefined
  const tags = members(header)
  return tags.length === 1 && tags[0] === "*" ? undefined : tags
}

/** `true` when an `If-None-Match` header names the tag, by weak comparison, or is `*`. */
export const noneMatchHits = (header: string, etag: string): boolean =>
  members(header).some((tag) => tag === "*" || tag === etag || tag === `W/${etag}`)

// ---------------------------------------------------------------------------------------------------------------
// Listing: the query, the cursor and the link to the next page
// ---------------------------------------------------------------------------------------------------------------

// The cursor is the last id of a page in base64url: opaque to clients, cheap to check.
const encodeCursor = (id: string): string => Buffer.from(id, "latin1").toString("base64url")

const decodeCursor = (cursor: string): string | undefined => {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined
  const id = Buffer.from(cursor, "base64url").toString("latin1")
  return Route.isRouteId(id) && encodeCursor(id) === cursor ? id : undefined
}

/** The longest text `q` searches for, as the library takes it (docs/http-api.md, "Listing"). */
const MAX_SEARCH_LENGTH = 256
/** A tag's form (docs/router.md). */
const TAG = /^[a-z0-9][a-z0-9._:/-]{0,63}$/

const RULES: Record<string, (value: string) => string | undefined> = {
  limit: (value) =>
    /^[0-9]+$/.test(value) && Number(value) >= 1 && Number(value) <= RoutingHandler.MAX_PAGE_SIZE
      ? undefined
      : `must be a whole number from 1 to ${RoutingHandler.MAX_PAGE_SIZE} in decimal digits (got ${
        JSON.stringify(value)
      })`,
  cursor: (value) =>
    decodeCursor(value) === undefined
      ? "is not a cursor this API issued: pass the nextCursor of a previous page unchanged"
      : undefined,
  method: Route.checkMethod,
  pathPrefix: (value) =>
    value.charCodeAt(0) !== 47 /* / */
      ? `must start with "/" (got ${JSON.stringify(value)})`
      : value.length > Route.MAX_PATH_LENGTH
      ? `must be at most ${Route.MAX_PATH_LENGTH} characters, as a path is (got ${value.length})`
      : undefined,
  handler: Route.checkName,
  middleware: Route.checkName,
  q: (value) =>
    value.length >= 1 && value.length <= MAX_SEARCH_LENGTH
      ? undefined
      : `must be 1 to ${MAX_SEARCH_LENGTH} characters (got ${value.length})`,
  enabled: (value) =>
    value === "true" || value === "false"
      ? undefined
      : `must be true or false (got ${JSON.stringify(value)}): enabled=false lists the disabled routes`,
  tag: (value) =>
    TAG.test(value)
      ? undefined
      : `is not a tag (got ${JSON.stringify(value.slice(0, 80))}): 1–64 of lowercase letters, digits and . _ : / -, ` +
        "starting with a letter or digit"
}
const PARAMETERS = Object.keys(RULES)

const unknownParameter = (name: string): string =>
  name === "access_token"
    ? "is not a parameter: tokens in the query never authenticate; send \"Authorization: Bearer <token>\""
    : `is not a parameter of this listing: use ${PARAMETERS.join(", ")}`

/**
 * The listing query of a raw query string, decoded as `URLSearchParams` decodes it, or every problem found: a
 * parameter given twice, an unknown one, a value breaking its rule.
 */
export const parseQuery = (raw: string): Either.Either<ListQuery, ReadonlyArray<Route.FieldIssue>> => {
  if (raw === "") return Either.right({ limit: RoutingHandler.DEFAULT_PAGE_SIZE })
  const values: Record<string, string> = {}
  const issues: Array<Route.FieldIssue> = []
  const reported = new Set<string>()
  for (const [name, value] of new URLSearchParams(raw)) {
    if (!PARAMETERS.includes(name)) {
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
    const refused = RULES[name]!(value)
    if (refused !== undefined) issues.push({ path: name, message: refused })
  }
  if (issues.length > 0) return Either.left(issues.slice(0, Route.MAX_ISSUES))
  return Either.right({
    limit: values.limit === undefined ? RoutingHandler.DEFAULT_PAGE_SIZE : Number(values.limit),
    after: values.cursor === undefined ? undefined : decodeCursor(values.cursor),
    method: values.method,
    pathPrefix: values.pathPrefix,
    handler: values.handler,
    middleware: values.middleware,
    q: values.q,
    enabled: values.enabled === undefined ? undefined : values.enabled === "true",
    tag: values.tag
  })
}

/** The `nextCursor` of a page and, when a route follows, its `Link` to the next page with the same filters. */
export const nextPage = (
  query: ListQuery,
  page: Page<Stored>
): { readonly cursor: string | null; readonly link: string | undefined } => {
  const last = page.items[page.items.length - 1]
  if (!page.hasMore || last === undefined) return { cursor: null, link: undefined }
  const cursor = encodeCursor(last.id)
  const params = new URLSearchParams({ limit: String(query.limit) })
  if (query.method !== undefined) params.set("method", query.method)
  if (query.pathPrefix !== undefined) params.set("pathPrefix", query.pathPrefix)
  if (query.handler !== undefined) params.set("handler", query.handler)
  if (query.middleware !== undefined) params.set("middleware", query.middleware)
  if (query.q !== undefined) params.set("q", query.q)
  if (query.enabled !== undefined) params.set("enabled", String(query.enabled))
  if (query.tag !== undefined) params.set("tag", query.tag)
  params.set("cursor", cursor)
  return { cursor, link: `<${COLLECTION}?${params.toString()}>; rel="next"` }
}

// ---------------------------------------------------------------------------------------------------------------
// The change log: its pages, restore and dry runs (docs/history.md)
// ---------------------------------------------------------------------------------------------------------------

/** The header of every write's answer: the revision of its change. */
export const REVISION_HEADER = "registry-revision"
export const HISTORY = COLLECTION + "/history"
/** The path of one route's history and its restore, after the route's id. */
export const ROUTE_HISTORY = "history"
export const RESTORE = "restore"

const DEFAULT_HISTORY_PAGE = 50
const MAX_HISTORY_PAGE = 200
const ACTIONS: ReadonlyArray<string> = ["create", "update", "delete", "restore"]

// A page's cursor is the last revision of the page, as base64url of its decimal digits.
const encodeRevision = (revision: number): string => Buffer.from(String(revision), "latin1").toString("base64url")

const decodeRevision = (cursor: string): number | undefined => {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined
  const digits = Buffer.from(cursor, "base64url").toString("latin1")
  return /^[1-9][0-9]{0,15}$/.test(digits) && Number.isSafeInteger(Number(digits)) &&
      encodeRevision(Number(digits)) === cursor
    ? Number(digits)
    : undefined
}

const HISTORY_RULES: Record<string, (value: string) => string | undefined> = {
  limit: (value) =>
    /^[0-9]+$/.test(value) && Number(value) >= 1 && Number(value) <= MAX_HISTORY_PAGE
      ? undefined
      : `must be a whole number from 1 to ${MAX_HISTORY_PAGE} in decimal digits (got ${JSON.stringify(value)})`,
  cursor: (value) =>
    decodeRevision(value) === undefined
      ? "is not a cursor this API issued: pass the nextCursor of a previous page unchanged"
      : undefined,
  routeId: (value) => Route.isRouteId(value) ? undefined : `must be a route id (got ${JSON.stringify(value)})`,
  actor: (value) =>
    value.length >= 1 && value.length <= 256 ? undefined : "must be a principal id of 1 to 256 characters",
  action: (value) =>
    ACTIONS.includes(value) ? undefined : `must be one of ${ACTIONS.join(", ")} (got ${JSON.stringify(value)})`
}

/** The query of a page of the log, or every problem found; `routeId` given by the path is not a parameter. */
export const parseHistoryQuery = (
  raw: string,
  routeId: string | undefined
): Either.Either<HistoryQuery, ReadonlyArray<Route.FieldIssue>> => {
  const names = Object.keys(HISTORY_RULES).filter((name) => routeId === undefined || name !== "routeId")
  const values: Record<string, string> = {}
  const issues: Array<Route.FieldIssue> = []
  for (const [name, value] of new URLSearchParams(raw)) {
    if (!names.includes(name)) {
      issues.push({ path: name, message: `is not a parameter of this history: use ${names.join(", ")}` })
    } else if (values[name] !== undefined) {
      issues.push({ path: name, message: "is given more than once: give it at most once" })
    } else {
      const refused = HISTORY_RULES[name]!(value)
      if (refused === undefined) values[name] = value
      else issues.push({ path: name, message: refused })
    }
  }
  if (issues.length > 0) return Either.left(issues.slice(0, Route.MAX_ISSUES))
  return Either.right({
    limit: values.limit === undefined ? DEFAULT_HISTORY_PAGE : Number(values.limit),
    before: values.cursor === undefined ? undefined : decodeRevision(values.cursor),
    routeId: routeId ?? values.routeId,
    actor: values.actor,
    action: values.action as RouteRepository.Action | undefined
  })
}

/** The `nextCursor` of a page of the log and, when an entry follows, its `Link` (`path`: the page's own). */
export const nextHistoryPage = (
  path: string,
  query: HistoryQuery,
  page: Page<Entry<unknown>>
): { readonly cursor: string | null; readonly link: string | undefined } => {
  const last = page.items[page.items.length - 1]
  if (!page.hasMore || last === undefined) return { cursor: null, link: undefined }
  const cursor = encodeRevision(last.revision)
  const params = new URLSearchParams({ limit: String(query.limit) })
  if (path === HISTORY && query.routeId !== undefined) params.set("routeId", query.routeId)
  if (query.actor !== undefined) params.set("actor", query.actor)
  if (query.action !== undefined) params.set("action", query.action)
  params.set("cursor", cursor)
  return { cursor, link: `<${path}?${params.toString()}>; rel="next"` }
}

/** An entry as the API answers it, each route as `json` renders it. */
export const entryJson = <R>(entry: Entry<R>, json: (route: R) => string): string =>
  `{"revision":${entry.revision},"at":"${entry.at}","actor":${JSON.stringify(entry.actor)},` +
  `"action":"${entry.action}","routeId":"${entry.routeId}",` +
  `"before":${entry.before === null ? "null" : json(entry.before)},` +
  `"after":${entry.after === null ? "null" : json(entry.after)}` +
  (entry.restoredFrom === undefined ? "}" : `,"restoredFrom":${entry.restoredFrom}}`)

/**
 * Whether a write's query asks for a dry run (`dryRun=true`), or the refusal of any other value or of the parameter
 * given twice. Other parameters are ignored, as the library ignores them.
 */
export const dryRunOf = (query: string): boolean | Prepared => {
  if (query === "") return false
  const values = new URLSearchParams(query).getAll("dryRun")
  if (values.length === 0) return false
  if (values.length === 1 && values[0] === "true") return true
  return invalidQuery([{
    path: "dryRun",
    message: values.length > 1
      ? "is given more than once: give it at most once"
      : `must be "true" to try the change without making it, or left out (got ${JSON.stringify(values[0])})`
  }])
}

/** The revision a restore's body names, or every problem with it. */
export const parseRestore = (body: unknown): Either.Either<number, ReadonlyArray<Route.FieldIssue>> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return Either.left([{ path: "", message: "must be a JSON object: {\"revision\": <positive integer>}" }])
  }
  const issues: Array<Route.FieldIssue> = Object.keys(body).filter((key) => key !== "revision").map((key) => ({
    path: key,
    message: `unknown field ${JSON.stringify(key)}: the body holds only "revision"`
  }))
  const revision = (body as { revision?: unknown }).revision
  if (revision === undefined) issues.push({ path: "revision", message: "is required" })
  else if (typeof revision !== "number" || !Number.isSafeInteger(revision) || revision < 1) {
    issues.push({ path: "revision", message: `must be a positive integer (got ${JSON.stringify(revision)})` })
  }
  return issues.length > 0 ? Either.left(issues.slice(0, Route.MAX_ISSUES)) : Either.right(revision as number)
}

export const invalidRestoreBody = (errors: ReadonlyArray<Route.FieldIssue>): Prepared =>
  problem(
    "invalid_restore",
    "Send exactly {\"revision\": <positive integer>}: the revision of this route's log to go back to.",
    undefined,
    { errors }
  )

export const invalidRestore = (id: string, revision: number, refused: InvalidRestore): Prepared =>
  refused.invalidRestore === "deleted"
    ? problem(
      "invalid_restore",
      `Revision ${revision} deleted route ${id}: restore a revision that left the route in place.`,
      undefined,
      { errors: [{ path: "revision", message: `deleted the route: there is nothing to restore` }] }
    )
    : problem(
      "invalid_restore",
      `Revision ${revision} is not in the log of route ${id}: it never changed this route, or the log no longer ` +
        "holds it (pruned past its retention). Read GET /v1/routing/{id}/history for its revisions.",
      undefined,
      { errors: [{ path: "revision", message: "is not in this route's log" }] }
    )

/** The answer to a refused change of route `id`. */
export const refusal = (id: string, refused: Refusal): Prepared =>
  refused === "NotFound"
    ? prepare(routeNotFound(id))
    : refused === "PreconditionFailed"
    ? preconditionFailed(id)
    : "tooManyMethods" in refused
    ? tooManyMethods()
    : prepare(routeConflict(refused.method, refused.path, refused.conflictingRouteId, refused.when))

// ---------------------------------------------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------------------------------------------

/** A stored route: the six wire fields (`createdAt` as text), its revision and its ETag. */
export interface Stored extends RouteRecord {
  readonly revision: number
  readonly etag: string
}

export interface Page<R> {
  readonly items: ReadonlyArray<R>
  /** `true` exactly when a route matching the filters sorts after the last item. */
  readonly hasMore: boolean
}

/** Why a change of an existing route was refused, in the order it is decided. */
export type Refusal = "NotFound" | "PreconditionFailed" | Conflict | TooManyMethods

export interface Conflict {
  readonly method: string
  readonly path: string
  readonly when: When.When | undefined
  readonly conflictingRouteId: string
}

// Sorted id lists: ids are UUIDv7 made by this process, so an insert is an append but for a clock step back.
const firstAfter = (ids: ReadonlyArray<string>, after: string): number => {
  let low = 0
  let high = ids.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (ids[middle]! <= after) low = middle + 1
    else high = middle
  }
  return low
}

const insertSorted = (ids: Array<string>, id: string): void => {
  if (ids.length === 0 || ids[ids.length - 1]! < id) ids.push(id)
  else ids.splice(firstAfter(ids, id), 0, id)
}

const removeSorted = (ids: Array<string>, id: string): void => {
  const at = firstAfter(ids, id) - 1
  if (ids[at] === id) ids.splice(at, 1)
}

/** Sorted ids under each value of one field, for the filters: a page walks the shortest list that can match. */
class Postings {
  readonly lists = new Map<string, Array<string>>()
  add(key: string, id: string) {
    const ids = this.lists.get(key)
    if (ids === undefined) this.lists.set(key, [id])
    else insertSorted(ids, id)
  }
  remove(key: string, id: string) {
    const ids = this.lists.get(key)
    if (ids === undefined) return
    removeSorted(ids, id)
    if (ids.length === 0) this.lists.delete(key)
  }
}

const NONE: ReadonlyArray<string> = []

const sameTags = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && a.every((tag, i) => tag === b[i])

// Configs are kept in one form (their keys in canonical order), so their JSON compares them.
const sameEntries = (a: ReadonlyArray<Route.MiddlewareEntry>, b: ReadonlyArray<Route.MiddlewareEntry>) =>
  a.length === b.length && a.every((entry, i) => {
    const other = b[i]!
    if (typeof entry === "string" || typeof other === "string") return entry === other
    return entry.name === other.name && JSON.stringify(entry.config) === JSON.stringify(other.config)
  })

// Splits and conditions are kept in canonical form too: equal exactly when their JSON is.
const sameJson = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b)

const changes = (route: Stored, patch: Route.RoutePatch): boolean =>
  (patch.method !== undefined && patch.method !== route.method) ||
  (patch.path !== undefined && patch.path !== route.path) ||
  (patch.handler !== undefined && patch.handler !== route.handler) ||
  (patch.middleware !== undefined && !sameEntries(patch.middleware, route.middleware)) ||
  (patch.enabled !== undefined && patch.enabled !== (route.enabled !== false)) ||
  (patch.split !== undefined && !sameJson(patch.split ?? undefined, route.split)) ||
  (patch.description !== undefined && patch.description !== (route.description ?? "")) ||
  (patch.tags !== undefined && !sameTags(patch.tags, route.tags ?? NONE)) ||
  (patch.when !== undefined && !sameJson(patch.when ?? undefined, route.when))

const nameOf = (entry: Route.MiddlewareEntry): string => typeof entry === "string" ? entry : entry.name

const matches = (route: Stored, query: ListQuery): boolean =>
  (query.method === undefined || route.method === query.method) &&
  (query.handler === undefined || route.handler === query.handler) &&
  (query.middleware === undefined || route.middleware.some((entry) => nameOf(entry) === query.middleware)) &&
  (query.pathPrefix === undefined || route.path.startsWith(query.pathPrefix)) &&
  (query.q === undefined || containsText(route, query.q)) &&
  (query.tag === undefined || (route.tags !== undefined && route.tags.includes(query.tag))) &&
  (query.enabled === undefined || (route.enabled !== false) === query.enabled)

// `q`: in the path, the handler, a middleware name, the description or a tag.
const containsText = (route: Stored, text: string): boolean =>
  route.path.includes(text) || route.handler.includes(text) ||
  route.middleware.some((entry) => nameOf(entry).includes(text)) ||
  (route.description !== undefined && route.description.includes(text)) ||
  (route.tags !== undefined && route.tags.some((tag) => tag.includes(text)))

/**
 * A route's fields, as a create gives them or a patch leaves them: those of docs/router.md only when not at their
 * defaults (`enabled` but when false).
 */
interface Fields {
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<Route.MiddlewareEntry>
  readonly handler: string
  readonly enabled?: boolean | undefined
  readonly split?: RouteRecord["split"]
  readonly description?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly when?: When.When | undefined
}

// The fields of `route` once `patch` is applied, each of docs/router.md kept only when not at its default.
const patched = (route: Stored, patch: Route.RoutePatch): Fields => ({
  method: patch.method ?? route.method,
  path: patch.path ?? route.path,
  middleware: patch.middleware ?? route.middleware,
  handler: patch.handler ?? route.handler,
  enabled: patch.enabled === undefined ? route.enabled : patch.enabled ? undefined : false,
  split: patch.split === undefined ? route.split : patch.split ?? undefined,
  description: patch.description === undefined ? route.description : patch.description || undefined,
  tags: patch.tags === undefined ? route.tags : patch.tags.length === 0 ? undefined : patch.tags,
  when: patch.when === undefined ? route.when : patch.when ?? undefined
})

// What a restore makes of the route right after the change it goes back to: every field given, those at their
// defaults too, so that they are reset.
const restoredPatch = (after: Stored): Route.RoutePatch => ({
  method: after.method as Route.HttpMethod,
  path: after.path as Route.RoutePath,
  middleware: after.middleware,
  handler: after.handler as Route.HandlerName,
  enabled: after.enabled !== false,
  split: after.split ?? null,
  description: after.description ?? "",
  tags: after.tags ?? NONE,
  when: after.when ?? null
})

/** An entry of the change log, holding the routes as the store keeps them: rendered only when the log is read. */
export interface Entry<R> {
  readonly revision: number
  readonly at: string
  readonly actor: string | null
  readonly action: RouteRepository.Action
  readonly routeId: string
  readonly before: R | null
  readonly after: R | null
  readonly restoredFrom: number | undefined
}

/** A restore the log cannot make: the revision is not in the route's log, or it deleted the route. */
export interface InvalidRestore {
  readonly invalidRestore: "not_in_log" | "deleted"
}

export interface Restored<R> {
  readonly restored: R
  readonly created: boolean
}

// The newest entries the log keeps, as the library's memory store keeps them by default.
const HISTORY_CAPACITY = RouteRepository.DEFAULT_MEMORY_HISTORY_CAPACITY

/**
 * Routes in memory, each kept as `build` makes it from its stored form (the lean peer adds its JSON and head), and
 * the change log. Every change decides its checks and writes synchronously, so of concurrent conflicting changes
 * exactly one wins. A change takes the next revision and appends one entry, so the kept entries' revisions are
 * consecutive and an entry is found by arithmetic. A dry run (`dryRun`) decides and answers as the change would,
 * with the revision it would take, and changes nothing.
 */
export const makeStore = <R extends Stored>(build: (stored: Stored) => R) => {
  const byId = new Map<string, R>()
  const idByKey = new Map<string, string>()
  const ids: Array<string> = []
  const byMethod = new Postings()
  const byHandler = new Postings()
  const byMiddleware = new Postings()
  const byTag = new Postings()
  let revision = 0
  // The log, oldest first from `oldest`: the array is cut once half of it is dropped.
  let log: Array<Entry<R>> = []
  let oldest = 0

  const append = (entry: Entry<R>) => {
    log.push(entry)
    if (log.length - oldest <= HISTORY_CAPACITY) return
    oldest++
    if (oldest * 2 >= log.length) {
      log = log.slice(oldest)
      oldest = 0
    }
  }
  // The index of the newest kept entry at or below `at`, or `oldest - 1` when none is.
  const indexAtOrBelow = (at: number): number =>
    oldest === log.length ? oldest - 1 : Math.min(log.length - 1, oldest + at - log[oldest]!.revision)
  const entryAt = (at: number): Entry<R> | undefined => {
    const i = indexAtOrBelow(at)
    return i >= oldest && log[i]!.revision === at ? log[i] : undefined
  }
  const logHolds = (id: string): boolean => {
    for (let i = log.length - 1; i >= oldest; i--) if (log[i]!.routeId === id) return true
    return false
  }

  // `key` is the route's method, shape and conditions, which the caller has already computed to check for a conflict.
  const index = (route: R, key: string) => {
    idByKey.set(key, route.id)
    byMethod.add(route.method, route.id)
    byHandler.add(route.handler, route.id)
    for (const entry of route.middleware) byMiddleware.add(nameOf(entry), route.id)
    if (route.tags !== undefined) { for (const tag of route.tags) byTag.add(tag, route.id) }
  }
  const unindex = (route: R) => {
    idByKey.delete(conflictKey(route.method, route.path, route.when))
    byMethod.remove(route.method, route.id)
    byHandler.remove(route.handler, route.id)
    for (const entry of route.middleware) byMiddleware.remove(nameOf(entry), route.id)
    if (route.tags !== undefined) { for (const tag of route.tags) byTag.remove(tag, route.id) }
  }
  // One object literal with every field: a spread would cost more than the rest of the record.
  const version = (id: string, createdAt: string, fields: Fields, dryRun: boolean): R => {
    const next = revision + 1
    if (!dryRun) revision = next
    return build({
      id,
      method: fields.method,
      path: fields.path,
      middleware: fields.middleware,
      handler: fields.handler,
      createdAt,
      enabled: fields.enabled === false ? false : undefined,
      split: fields.split,
      description: fields.description,
      tags: fields.tags,
      when: fields.when,
      revision: next,
      etag: `"${next}"`
    })
  }
  const candidates = (query: ListQuery): ReadonlyArray<string> => {
    let shortest: ReadonlyArray<string> = ids
    const narrow = (postings: Postings, key: string | undefined) => {
      if (key === undefined) return
      const list = postings.lists.get(key) ?? NONE
      if (list.length < shortest.length) shortest = list
    }
    narrow(byMethod, query.method)
    narrow(byHandler, query.handler)
    narrow(byMiddleware, query.middleware)
    narrow(byTag, query.tag)
    return shortest
  }

  // A method no route has, when MAX_METHODS are stored; `leaving` gives up its method in the same change.
  const refusesMethod = (method: string, leaving?: R): TooManyMethods | undefined => {
    if (byMethod.lists.has(method)) return undefined
    const freed = leaving !== undefined && byMethod.lists.get(leaving.method)?.length === 1 ? 1 : 0
    return byMethod.lists.size - freed < RouteRepository.MAX_METHODS ? undefined : { tooManyMethods: method }
  }

  // A new route (a create, or a restore of a deleted one, which gets an id and createdAt of its own).
  const insert = (
    input: Fields,
    actor: string | null,
    dryRun: boolean,
    restoredFrom: number | undefined
  ): Created<R> | TooManyMethods => {
    const key = conflictKey(input.method, input.path, input.when)
    const holder = idByKey.get(key)
    if (holder !== undefined) return { conflictingRouteId: holder }
    const refused = refusesMethod(input.method)
    if (refused !== undefined) return refused
    const now = Date.now()
    const route = version(Route.makeRouteId(now), new Date(now).toISOString(), input, dryRun)
    if (dryRun) return { created: route }
    byId.set(route.id, route)
    insertSorted(ids, route.id)
    index(route, key)
    append({
      revision: route.revision,
      at: route.createdAt,
      actor,
      action: restoredFrom === undefined ? "create" : "restore",
      routeId: route.id,
      before: null,
      after: route,
      restoredFrom
    })
    return { created: route }
  }

  // The fields `patch` gives replaced; a patch that changes nothing keeps the route and its revision.
  const replace = (
    current: R,
    patch: Route.RoutePatch,
    tags: ReadonlyArray<string> | undefined,
    actor: string | null,
    dryRun: boolean,
    restoredFrom: number | undefined
  ): R | Refusal => {
    if (tags !== undefined && !tags.includes(current.etag)) return "PreconditionFailed"
    if (!changes(current, patch)) return current
    const id = current.id
    const fields = patched(current, patch)
    const { method, path, when } = fields
    const key = conflictKey(method, path, when)
    const holder = idByKey.get(key)
    if (holder !== undefined && holder !== id) return { method, path, when, conflictingRouteId: holder }
    const refused = method === current.method ? undefined : refusesMethod(method, current)
    if (refused !== undefined) return refused
    const updated = version(id, current.createdAt, fields, dryRun)
    if (dryRun) return updated
    unindex(current)
    byId.set(id, updated)
    index(updated, key)
    append({
      revision: updated.revision,
      at: new Date().toISOString(),
      actor,
      action: restoredFrom === undefined ? "update" : "restore",
      routeId: id,
      before: current,
      after: updated,
      restoredFrom
    })
    return updated
  }

  return {
    create: (input: Fields, actor: string | null = null, dryRun = false) => insert(input, actor, dryRun, undefined),
    get: (id: string): R | undefined => byId.get(id),
    list: (query: ListQuery): Page<R> => {
      const list = candidates(query)
      const items: Array<R> = []
      for (let i = query.after === undefined ? 0 : firstAfter(list, query.after); i < list.length; i++) {
        const route = byId.get(list[i]!)!
        if (!matches(route, query)) continue
        if (items.length === query.limit) return { items, hasMore: true }
        items.push(route)
      }
      return { items, hasMore: false }
    },
    update: (
      id: string,
      patch: Route.RoutePatch,
      tags: ReadonlyArray<string> | undefined,
      actor: string | null,
      dryRun: boolean
    ): R | Refusal => {
      const current = byId.get(id)
      return current === undefined ? "NotFound" : replace(current, patch, tags, actor, dryRun, undefined)
    },
    /** The revision of the delete, or why it was refused. */
    remove: (
      id: string,
      tags: ReadonlyArray<string> | undefined,
      actor: string | null,
      dryRun: boolean
    ): number | Refusal => {
      const current = byId.get(id)
      if (current === undefined) return "NotFound"
      if (tags !== undefined && !tags.includes(current.etag)) return "PreconditionFailed"
      if (dryRun) return revision + 1
      byId.delete(id)
      removeSorted(ids, id)
      unindex(current)
      revision++
      append({
        revision,
        at: new Date().toISOString(),
        actor,
        action: "delete",
        routeId: id,
        before: current,
        after: null,
        restoredFrom: undefined
      })
      return revision
    },
    /** The route made again as it was right after the change at revision `at` of its log (docs/history.md). */
    restore: (
      id: string,
      at: number,
      tags: ReadonlyArray<string> | undefined,
      actor: string | null,
      dryRun: boolean
    ): Restored<R> | Refusal | InvalidRestore => {
      const target = entryAt(at)
      if (target === undefined || target.routeId !== id) {
        return byId.has(id) || logHolds(id) ? { invalidRestore: "not_in_log" } : "NotFound"
      }
      const after = target.after
      if (after === null) return { invalidRestore: "deleted" }
      const current = byId.get(id)
      if (current !== undefined) {
        const restored = replace(current, restoredPatch(after), tags, actor, dryRun, at)
        return typeof restored === "string" || !("etag" in restored) ? restored : { restored, created: false }
      }
      // A route deleted has no current version for If-Match to name.
      if (tags !== undefined) return "PreconditionFailed"
      const created = insert(after, actor, dryRun, at)
      if ("created" in created) return { restored: created.created, created: true }
      if ("tooManyMethods" in created) return created
      const { method, path, when } = after
      return { method, path, when, conflictingRouteId: created.conflictingRouteId }
    },
    /** A page of the log, newest first: the entries below `before` that pass the filters. */
    history: (query: HistoryQuery): Page<Entry<R>> => {
      const items: Array<Entry<R>> = []
      const start = query.before === undefined ? log.length - 1 : indexAtOrBelow(query.before - 1)
      for (let i = start; i >= oldest; i--) {
        const entry = log[i]!
        if (
          (query.routeId !== undefined && entry.routeId !== query.routeId) ||
          (query.actor !== undefined && entry.actor !== query.actor) ||
          (query.action !== undefined && entry.action !== query.action)
        ) continue
        if (items.length === query.limit) return { items, hasMore: true }
        items.push(entry)
      }
      return { items, hasMore: false }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------------------------

/** A stored route with its answer prepared: the JSON every answer carries, and the head of a 200. */
interface Kept extends Stored {
  readonly json: string
  readonly length: string
  readonly head: Array<string>
}

const keep = (stored: Stored): Kept => {
  const { createdAt, description, enabled, etag, handler, id, method, middleware, path, revision, split, tags, when } =
    stored
  const six = JSON.stringify({ id, method, path, middleware, handler, createdAt })
  const fields = fieldsJson(stored)
  const json = fields === "" ? six : six.slice(0, -1) + fields + "}"
  const length = String(Buffer.byteLength(json))
  const head = ["content-type", JSON_TYPE, "etag", etag, "content-length", length]
  return {
    id,
    method,
    path,
    middleware,
    handler,
    createdAt,
    enabled,
    split,
    description,
    tags,
    when,
    revision,
    etag,
    json,
    length,
    head
  }
}

// After an answer that closes the connection while the body is still coming, the rest is read and discarded (within
// these bounds) before the response ends: a socket closed on unread bytes resets, and the reset can lose the answer.
const LINGER_BYTES = 4 * 1024 * 1024
const LINGER_MILLIS = 2_000

const discard = (req: Http.IncomingMessage, done: () => void): void => {
  let discarded = 0
  const finish = () => {
    clearTimeout(timer)
    req.off("data", onData).off("end", finish).off("close", finish).off("error", finish)
    req.pause()
    done()
  }
  const onData = (chunk: Buffer) => {
    discarded += chunk.length
    if (discarded > LINGER_BYTES) finish()
  }
  const timer = setTimeout(finish, LINGER_MILLIS)
  req.on("data", onData).on("end", finish).on("close", finish).on("error", finish)
  req.resume()
}

/**
 * Writes a prepared answer. `waiting`: the client waits for a `100 Continue` that was not sent, so Node will close
 * the connection; then, as for an answer that closes it, the rest of the body is discarded first.
 */
const send = (req: Http.IncomingMessage, res: Http.ServerResponse, answer: Prepared, waiting = false) => {
  res.writeHead(answer.status, answer.phrase, answer.head)
  if (req.complete || !(answer.close || waiting)) return void res.end(answer.body)
  res.write(answer.body)
  discard(req, () => res.end())
}

const empty = (res: Http.ServerResponse, status: number, head: Array<string>) => {
  res.writeHead(status, head)
  res.end()
}

export const start = async (options: Options): Promise<Started> => {
  const authorize = makeAuthorizer(options.tokens)
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const timeout = options.bodyTimeoutMillis ?? DEFAULT_BODY_TIMEOUT_MILLIS
  const TOO_LARGE = prepare(tooLarge(limit))
  const TIMED_OUT = prepare(timedOut(timeout))
  const INCOMPLETE = prepare(INCOMPLETE_BODY)
  const store = makeStore(keep)
  const jsonOf = (route: Kept) => route.json
  const seeded = seedSync(options.seed ?? 0, store.create)

  /**
   * Reads a JSON body after checking its content type (415) and declared size (413), then hands it to `done`; every
   * refusal is answered here. `waits`: the client waits for `100 Continue`, sent only now that the body is wanted.
   */
  const readJson = (
    req: Http.IncomingMessage,
    res: Http.ServerResponse,
    waits: boolean,
    patch: boolean,
    done: (json: unknown) => void
  ) => {
    const type = req.headers["content-type"]
    if (!(patch ? acceptsPatch(type) : acceptsCreate(type))) {
      return send(req, res, unsupportedMediaType(type, patch ? PATCH_TYPES : CREATE_TYPES), waits)
    }
    const declared = req.headers["content-length"]
    if (declared !== undefined && Number(declared) > limit) return send(req, res, TOO_LARGE, waits)
    if (waits) res.writeContinue()
    // One chunk is the common case: an array only for more.
    let first: Buffer | undefined
    let rest: Array<Buffer> | undefined
    let size = 0
    const stop = () => {
      clearTimeout(timer)
      req.off("data", onData).off("end", onEnd).off("close", onClose).off("error", onClose)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        stop()
        req.pause()
        send(req, res, TOO_LARGE)
      } else if (first === undefined) first = chunk
      else (rest ??= [first]).push(chunk)
    }
    const onEnd = () => {
      stop()
      const body = rest !== undefined ? Buffer.concat(rest, size) : first ?? Buffer.alloc(0)
      const parsed = parseJson(body)
      if ("refused" in parsed) send(req, res, prepare(parsed.refused))
      else done(parsed.json)
    }
    const onClose = () => {
      stop()
      send(req, res, INCOMPLETE)
    }
    const timer = setTimeout(() => {
      stop()
      req.pause()
      send(req, res, TIMED_OUT)
    }, timeout)
    req.on("data", onData).on("end", onEnd).on("close", onClose).on("error", onClose)
  }

  const create = (req: Http.IncomingMessage, res: Http.ServerResponse, waits: boolean, query: string) => {
    const who = authorize(authorizationOf(req), "routes:write")
    if (!(who instanceof Principal)) return send(req, res, who, waits)
    const dryRun = dryRunOf(query)
    if (typeof dryRun !== "boolean") return send(req, res, dryRun, waits)
    readJson(req, res, waits, false, (json) => {
      const input = Route.validateCreate(json)
      if (input._tag === "Left") return send(req, res, invalidRoute(input.left))
      const result = store.create(input.right, who.id, dryRun)
      if ("tooManyMethods" in result) return send(req, res, tooManyMethods())
      if (!("created" in result)) {
        return send(
          req,
          res,
          prepare(routeConflict(input.right.method, input.right.path, result.conflictingRouteId, input.right.when))
        )
      }
      const route = result.created
      const head = [
        "content-type",
        JSON_TYPE,
        "location",
        ITEM_PREFIX + route.id,
        "etag",
        route.etag,
        "content-length",
        route.length
      ]
      if (!dryRun) head.push(REVISION_HEADER, String(route.revision))
      res.writeHead(201, head)
      res.end(route.json)
    })
  }

  const list = (req: Http.IncomingMessage, res: Http.ServerResponse, query: string) => {
    const who = authorize(authorizationOf(req), "routes:read")
    if (!(who instanceof Principal)) return send(req, res, who)
    const parsed = parseQuery(query)
    if (parsed._tag === "Left") return send(req, res, invalidQuery(parsed.left))
    const page = store.list(parsed.right)
    const next = nextPage(parsed.right, page)
    let body = "{\"items\":["
    for (let i = 0; i < page.items.length; i++) body += (i === 0 ? "" : ",") + page.items[i]!.json
    body += `],"nextCursor":${next.cursor === null ? "null" : `"${next.cursor}"`}}`
    const head = ["content-type", JSON_TYPE, "content-length", String(Buffer.byteLength(body))]
    if (next.link !== undefined) head.push("link", next.link)
    res.writeHead(200, head)
    res.end(body)
  }

  const get = (req: Http.IncomingMessage, res: Http.ServerResponse, id: string) => {
    const who = authorize(authorizationOf(req), "routes:read")
    if (!(who instanceof Principal)) return send(req, res, who)
    const route = store.get(id)
    if (route === undefined) return send(req, res, prepare(routeNotFound(id)))
    const noneMatch = req.headers["if-none-match"]
    if (noneMatch !== undefined && noneMatchHits(noneMatch, route.etag)) return empty(res, 304, ["etag", route.etag])
    res.writeHead(200, route.head)
    res.end(route.json)
  }

  // A changed route's 200 (an update, a restore in place): the head of a GET and the change's revision.
  const changed = (res: Http.ServerResponse, route: Kept, dryRun: boolean) => {
    res.writeHead(200, dryRun ? route.head : [...route.head, REVISION_HEADER, String(route.revision)])
    res.end(route.json)
  }

  const update = (
    req: Http.IncomingMessage,
    res: Http.ServerResponse,
    id: string,
    waits: boolean,
    query: string
  ) => {
    const who = authorize(authorizationOf(req), "routes:write")
    if (!(who instanceof Principal)) return send(req, res, who, waits)
    const dryRun = dryRunOf(query)
    if (typeof dryRun !== "boolean") return send(req, res, dryRun, waits)
    readJson(req, res, waits, true, (json) => {
      const patch = Route.validatePatch(json)
      if (patch._tag === "Left") return send(req, res, invalidRoute(patch.left))
      const result = store.update(id, patch.right, ifMatch(req.headers["if-match"]), who.id, dryRun)
      if (typeof result === "string" || !("etag" in result)) return send(req, res, refusal(id, result))
      changed(res, result, dryRun)
    })
  }

  const remove = (
    req: Http.IncomingMessage,
    res: Http.ServerResponse,
    id: string,
    waits: boolean,
    query: string
  ) => {
    const who = authorize(authorizationOf(req), "routes:write")
    if (!(who instanceof Principal)) return send(req, res, who, waits)
    const dryRun = dryRunOf(query)
    if (typeof dryRun !== "boolean") return send(req, res, dryRun, waits)
    const result = store.remove(id, ifMatch(req.headers["if-match"]), who.id, dryRun)
    if (typeof result !== "number") return send(req, res, refusal(id, result), waits)
    empty(res, 204, dryRun ? [] : [REVISION_HEADER, String(result)])
  }

  // A page of the log, or of one route's (`routeId`).
  const history = (
    req: Http.IncomingMessage,
    res: Http.ServerResponse,
    query: string,
    routeId: string | undefined
  ) => {
    const who = authorize(authorizationOf(req), "routes:read")
    if (!(who instanceof Principal)) return send(req, res, who)
    const parsed = parseHistoryQuery(query, routeId)
    if (parsed._tag === "Left") return send(req, res, invalidQuery(parsed.left))
    const page = store.history(parsed.right)
    // A route's history is not found only when the log holds nothing of it.
    if (routeId !== undefined && parsed.right.before === undefined && page.items.length === 0) {
      return send(req, res, prepare(routeNotFound(routeId)))
    }
    const next = nextHistoryPage(
      routeId === undefined ? HISTORY : `${ITEM_PREFIX}${routeId}/history`,
      parsed.right,
      page
    )
    let body = "{\"items\":["
    for (let i = 0; i < page.items.length; i++) body += (i === 0 ? "" : ",") + entryJson(page.items[i]!, jsonOf)
    body += `],"nextCursor":${next.cursor === null ? "null" : `"${next.cursor}"`}}`
    const head = ["content-type", JSON_TYPE, "content-length", String(Buffer.byteLength(body))]
    if (next.link !== undefined) head.push("link", next.link)
    res.writeHead(200, head)
    res.end(body)
  }

  const restore = (
    req: Http.IncomingMessage,
    res: Http.ServerResponse,
    id: string,
    waits: boolean,
    query: string
  ) => {
    const who = authorize(authorizationOf(req), "routes:write")
    if (!(who instanceof Principal)) return send(req, res, who, waits)
    const dryRun = dryRunOf(query)
    if (typeof dryRun !== "boolean") return send(req, res, dryRun, waits)
    readJson(req, res, waits, false, (json) => {
      const revision = parseRestore(json)
      if (revision._tag === "Left") return send(req, res, invalidRestoreBody(revision.left))
      const result = store.restore(id, revision.right, ifMatch(req.headers["if-match"]), who.id, dryRun)
      if (typeof result === "string" || !("restored" in result || "invalidRestore" in result)) {
        return send(req, res, refusal(id, result))
      }
      if ("invalidRestore" in result) return send(req, res, invalidRestore(id, revision.right, result))
      const route = result.restored
      if (!result.created) return changed(res, route, dryRun)
      const head = ["location", ITEM_PREFIX + route.id, ...route.head]
      if (!dryRun) head.push(REVISION_HEADER, String(route.revision))
      res.writeHead(201, head)
      res.end(route.json)
    })
  }

  // The path first (outside /v1/routing: not found), then the method (405), then the operation's own checks.
  const serve = (req: Http.IncomingMessage, res: Http.ServerResponse, waits: boolean) => {
    const target = req.url ?? "/"
    const mark = target.indexOf("?")
    let path = mark === -1 ? target : target.slice(0, mark)
    // An absolute-form target (RFC 9112 §3.2.2) names its path after the authority; an unreadable one is not found.
    if (path.charCodeAt(0) !== 47 /* / */ && URL.canParse(path, "http://localhost")) {
      path = new URL(path, "http://localhost").pathname
    }
    const method = req.method ?? "GET"
    const query = mark === -1 ? "" : target.slice(mark + 1)
    if (path === COLLECTION) {
      if (method === "GET") return list(req, res, query)
      if (method === "POST") return create(req, res, waits, query)
      return send(req, res, prepare(methodNotAllowed(method, path, COLLECTION_ALLOW)), waits)
    }
    if (path.startsWith(ITEM_PREFIX)) {
      const slash = path.indexOf("/", ITEM_PREFIX.length)
      if (slash === -1) {
        if (path === HISTORY) {
          if (method === "GET") return history(req, res, query, undefined)
          return send(req, res, prepare(methodNotAllowed(method, path, "GET")), waits)
        }
        const id = path.slice(ITEM_PREFIX.length)
        if (method === "GET") return get(req, res, id)
        if (method === "PATCH") return update(req, res, id, waits, query)
        if (method === "DELETE") return remove(req, res, id, waits, query)
        return send(req, res, prepare(methodNotAllowed(method, path, ROUTE_ALLOW)), waits)
      }
      const id = path.slice(ITEM_PREFIX.length, slash)
      const rest = path.slice(slash + 1)
      if (rest === ROUTE_HISTORY) {
        if (method === "GET") return history(req, res, query, id)
        return send(req, res, prepare(methodNotAllowed(method, path, "GET")), waits)
      }
      if (rest === RESTORE) {
        if (method === "POST") return restore(req, res, id, waits, query)
        return send(req, res, prepare(methodNotAllowed(method, path, "POST")), waits)
      }
    }
    send(req, res, NOT_FOUND, waits)
  }

  const server = Http.createServer()
  server.on(
    "request",
    process.env.TELEMETRY === "1"
      ? traced((req, res) => serve(req, res, false))
      : (req: Http.IncomingMessage, res: Http.ServerResponse) => serve(req, res, false)
  )
  // With this listener Node leaves `100 Continue` to us: sent only when the body is read, so a request refused before
  // gets its final answer and the client never sends the body.
  server.on("checkContinue", (req: Http.IncomingMessage, res: Http.ServerResponse) => serve(req, res, true))
  const port = await listen(server, options)
  return { port, seeded, close: () => closeServer(server) }
}

// With `TELEMETRY=1`, what the library records of a request when its telemetry is on, done as cheaply as Effect
// allows: a server span on Effect's tracer (made with the tracer itself, no fiber), named after the method and the
// route's template, with the same attributes but the problem's code, ended when the answer is sent; the request count
// and duration metrics. It is the floor the library's telemetry is measured against (docs/performance.md).
const requests = Metric.counter("route_registry_requests_total", { incremental: true })
const requestDuration = Metric.histogram(
  "route_registry_request_duration_ms",
  MetricBoundaries.exponential({ start: 0.01, factor: 2, count: 23 })
)
const labelsOf = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
const labels = (...pairs: ReadonlyArray<string>) => {
  const id = pairs.join("\n")
  let known = labelsOf.get(id)
  if (known === undefined) {
    known = []
    for (let i = 0; i < pairs.length; i += 2) {
      ;(known as Array<MetricLabel.MetricLabel>).push(MetricLabel.make(pairs[i]!, pairs[i + 1]!))
    }
    labelsOf.set(id, known)
  }
  return known
}
const OPERATIONS: Record<string, Record<string, string>> = {
  [COLLECTION]: { GET: "list", POST: "create" },
  [`${COLLECTION}/{id}`]: { GET: "get", PATCH: "update", DELETE: "remove" }
}
const traced = (serve: (req: Http.IncomingMessage, res: Http.ServerResponse) => void) => {
  const tracer = Effect.runSync(Effect.tracer)
  const noParent = Option.none()
  return (req: Http.IncomingMessage, res: Http.ServerResponse) => {
    const start = process.hrtime.bigint()
    const method = req.method ?? "_OTHER"
    const path = req.url ?? ""
    const route = path.startsWith(ITEM_PREFIX) ? `${COLLECTION}/{id}` : COLLECTION
    const operation = OPERATIONS[route]![method] ?? "method_not_allowed"
    const span = tracer.span(`${method} ${route}`, noParent, Context.empty(), [], start, "server", {})
    span.attribute("http.request.method", method)
    span.attribute("http.route", route)
    span.attribute("route_registry.operation", operation)
    res.once("finish", () => {
      const end = process.hrtime.bigint()
      span.attribute("http.response.status_code", res.statusCode)
      requests.unsafeUpdate(1, labels("operation", operation, "status", String(res.statusCode)))
      requestDuration.unsafeUpdate(Number(end - start) / 1e6, labels("operation", operation))
      span.end(end, Exit.void)
    })
    serve(req, res)
  }
}

runMain(import.meta.url, start)
