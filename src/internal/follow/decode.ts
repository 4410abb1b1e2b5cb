/**
 * The data of an `upsert` event, decoded as strictly as `Schema.decodeUnknownEither(Route.Route)` and without Schema:
 * a follower applies every change of its registry, so this is its hot path. The route's path is parsed once, for the
 * decision and for the table; and the event's text is recognised when it is exactly the route's JSON (`Route.toJson`),
 * so the follower's own replay ring records it as it came instead of serialising the route again.
 *
 * @internal
 */
import { Either } from "effect"
import * as Route from "../../Route.js"
import * as RouteFields from "../route/fields.js"
import * as Grammar from "../route/grammar.js"
import * as Path from "../route/path.js"
import * as Split from "../route/split.js"
import * as When from "../route/when.js"
import { MAX_BATCH_DESCRIPTION_LENGTH, MAX_BATCH_OPERATIONS } from "../store/batch.js"

/** A route decoded from an event, with its parsed path, before the follower gives it a revision. */
export interface Decoded {
  readonly id: Route.RouteId
  readonly method: Route.HttpMethod
  readonly path: Route.RoutePath
  readonly middleware: ReadonlyArray<Route.MiddlewareEntry>
  readonly handler: Route.HandlerName
  readonly createdAt: Date
  readonly enabled?: false
  readonly split?: Split.Split
  readonly description?: string
  readonly tags?: ReadonlyArray<string>
  readonly when?: When.When
  readonly parsed: Path.ParsedPath
  /** The event's data when it is byte for byte `Route.toJson` of the route, else `undefined`. */
  readonly text: string | undefined
}

// The fields of a route in the order `Route.toJson` writes them.
const KEYS = ["id", "method", "path", "middleware", "handler", "createdAt"] as const

// As `Date.prototype.toISOString` prints a date from year 0 to 9999: the only form a registry writes.
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const parseDate = (u: unknown): Date | undefined => {
  if (typeof u !== "string" || !ISO_DATE.test(u)) return undefined
  const date = new Date(u)
  // Refuses a date that does not exist (February 30th) rather than reading it as another.
  return date.toISOString() === u ? date : undefined
}

const isName = (u: unknown): u is string => typeof u === "string" && Grammar.checkName(u) === undefined

// A configured entry as a registry writes it: `{ "name", "config" }`, its config valid and in its canonical form.
const isConfigured = (u: unknown): u is RouteFields.Configured => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return false
  const { config, name } = u as Record<string, unknown>
  return Object.keys(u).length === 2 && isName(name) && RouteFields.checkConfig(config, "config").length === 0
}

const isMiddleware = (u: unknown): u is ReadonlyArray<RouteFields.Entry> => {
  if (!Array.isArray(u) || Grammar.checkMiddlewareList(u) !== undefined) return false
  for (let i = 0; i < u.length; i++) {
    if (!isName(u[i]) && !isConfigured(u[i])) return false
    const name = RouteFields.nameOf(u[i])
    for (let j = 0; j < i; j++) if (RouteFields.nameOf(u[j]) === name) return false
  }
  return true
}

const hasRouteKeys = (record: object): boolean => {
  const keys = Object.keys(record)
  if (keys.length !== KEYS.length) return false
  for (let i = 0; i < KEYS.length; i++) if (keys[i] !== KEYS[i]) return false
  return true
}

// The length `Route.toJson` gives the route when none of its strings needs an escape. Every escape, space or key
// written another way makes a text longer, so a text of the route's six keys in `toJson`'s order is `toJson`'s own
// exactly when it has this length (`{"id":"…","method":"…","path":"…","middleware":[…],"handler":"…","createdAt":"…"}`).
const plainLength = (
  id: string,
  method: string,
  path: string,
  middleware: ReadonlyArray<RouteFields.Entry>,
  handler: string
) => {
  let names = middleware.length === 0 ? 0 : middleware.length - 1
  for (const entry of middleware) names += typeof entry === "string" ? entry.length + 2 : Number.NaN
  return 75 + id.length + method.length + path.length + names + handler.length + 24
}

/** The route `data` holds, or `undefined` when it is not a route this process can hold. */
export const decodeUpsert = (json: unknown, data: string): Decoded | undefined => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined
  const { createdAt: rawDate, handler, id, method, middleware, path } = json as Record<string, unknown>
  if (!Route.isRouteId(id) || typeof method !== "string" || Grammar.checkMethod(method) !== undefined) return undefined
  if (typeof path !== "string" || !isName(handler) || !isMiddleware(middleware)) return undefined
  const createdAt = parseDate(rawDate)
  if (createdAt === undefined) return undefined
  const parsed = Path.parsePath(path)
  if (Either.isLeft(parsed)) return undefined
  const optional = optionalFields(json as Record<string, unknown>, handler)
  if (optional === undefined) return undefined
  // Schema.Class ignores keys it does not know; only the text is then not the route's own. A route with the fields of
  // docs/router.md is written again by the follower's ring (rare, and not worth recognising).
  const canonical = hasRouteKeys(json) && data.length === plainLength(id, method, path, middleware, handler)
  return {
    id,
    method: method as Route.HttpMethod,
    path: parsed.right.path,
    middleware: RouteFields.hasConfig(middleware) ? middleware.map(RouteFields.canonicalEntry) : middleware,
    handler: handler as Route.HandlerName,
    createdAt,
    ...optional,
    parsed: parsed.right,
    text: canonical ? data : undefined
  }
}

const NONE = {}

// The fields of docs/router.md an event carries, as a route keeps them; `undefined` when one is not valid. A follower that
// dropped them would serve a disabled route, ignore a split, or serve a route whatever its conditions.
const optionalFields = (
  json: Record<string, unknown>,
  handler: string
): Pick<Decoded, "enabled" | "split" | "description" | "tags" | "when"> | undefined => {
  const { description, enabled, split, tags, when } = json
  if (
    enabled === undefined && split === undefined && description === undefined && tags === undefined &&
    when === undefined
  ) return NONE
  if (enabled !== undefined && typeof enabled !== "boolean") return undefined
  if (split !== undefined && Split.check(split, handler).length > 0) return undefined
  if (description !== undefined && RouteFields.checkDescription(description) !== undefined) return undefined
  if (tags !== undefined && RouteFields.checkTags(tags).length > 0) return undefined
  if (when !== undefined && When.check(when).length > 0) return undefined
  const conditions = when === undefined ? undefined : When.canonical(when as Record<string, unknown>)
  return {
    ...(enabled === false ? { enabled: false } : {}),
    ...(split === undefined ? {} : { split: Split.canonical(split as Record<string, unknown>) }),
    ...(description === undefined || description === "" ? {} : { description: description as string }),
    ...(tags === undefined || (tags as ReadonlyArray<string>).length === 0
      ? {}
      : { tags: tags as ReadonlyArray<string> }),
    ...(conditions === undefined ? {} : { when: conditions })
  }
}

/** A batch event's data (docs/batches.md): the batch's id, its description, and its changes, each with its revision. */
export interface BatchData {
  readonly batch: string
  readonly description?: string | undefined
  readonly events: ReadonlyArray<
    { readonly event: "upsert" | "delete"; readonly revision: number; readonly data: unknown }
  >
}

/** A batch event's data, or what is wrong with it: checked whole before any of it is applied. */
export const parseBatch = (data: string): BatchData | string => {
  let json: unknown
  try {
    json = JSON.parse(data)
  } catch {
    return `a batch event whose data is not JSON: ${data.slice(0, 200)}`
  }
  const { batch, description, events } = (json ?? {}) as { batch?: unknown; description?: unknown; events?: unknown }
  const wellFormed = typeof batch === "string" && Array.isArray(events) && events.length <= MAX_BATCH_OPERATIONS &&
    (description === undefined ||
      typeof description === "string" && description.length <= MAX_BATCH_DESCRIPTION_LENGTH) &&
    events.every((item) =>
      typeof item === "object" && item !== null && (item.event === "upsert" || item.event === "delete") &&
      Number.isSafeInteger(item.revision) && item.revision > 0 && typeof item.data?.id === "string"
    )
  if (!wellFormed) return `a batch event that is not a batch: ${data.slice(0, 200)}`
  return description === undefined ? { batch, events } : { batch, description: description as string, events }
}
