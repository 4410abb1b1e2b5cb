/**
 * The routing API's endpoints, each declared once: its method, its path, the scope it needs, what telemetry calls it,
 * whether it writes, and the problems it answers besides those of every endpoint. The request core dispatches by it
 * (`dispatch.ts`), the `Allow` of every 405 lists its methods, telemetry names its spans from it, and `RoutingApi`
 * declares its OpenAPI document from it; `test/endpoints.test.ts` fails when any of them drifts from it. A new
 * endpoint is a row here and its operation in `dispatch.ts` (which the type system requires).
 *
 * @internal
 */
import type { Effect } from "effect"
import type * as Problem from "../../Problem.js"
import { COLLECTION, type Request, type Response } from "./exchange.js"

/** One route's path, as telemetry (`http.route`) and the OpenAPI document name it. */
export const ITEM = `${COLLECTION}/{id}`

/** The change stream's path. */
export const CHANGES = `${COLLECTION}/changes`

/** The path of the question "which route serves this request?". */
export const MATCH = `${COLLECTION}/match`

/** The change log's path, and one route's. */
export const HISTORY = `${COLLECTION}/history`
export const ROUTE_HISTORY = `${ITEM}/history`

/** The path of a route's restore. */
export const RESTORE = `${ITEM}/restore`

/** The path of change sets. */
export const BATCH = `${COLLECTION}/batch`

/** The fleet's path. */
export const FOLLOWERS = `${COLLECTION}/followers`

/** The scopes an endpoint needs: a prefix scope (`routes:write:/a`) holds `routes:write` for the routes under it. */
export type Scope = "routes:read" | "routes:write"

/** The methods the API serves. */
export type Method = "GET" | "POST" | "PATCH" | "DELETE"

/** One endpoint. */
export interface Endpoint {
  readonly method: Method
  /** Its path, `{id}` standing for a route's id. */
  readonly path: string
  /** The scope its token needs, checked before anything else is read. */
  readonly scope: Scope
  /** What telemetry calls it (`route_registry.operation`). */
  readonly operation: string
  /** A write: a follower's read-only store refuses it (`Answers.READ_ONLY`). */
  readonly write: boolean
  /** The problems it answers besides `EVERY_ENDPOINT`'s, in the order its OpenAPI operation lists them. */
  readonly problems: ReadonlyArray<Problem.Code>
}

const read = { scope: "routes:read", write: false } as const
const write = { scope: "routes:write", write: true } as const

/** Every endpoint, by its OpenAPI operation's name, in the order the document declares them. */
export const ENDPOINTS = {
  list: { method: "GET", path: COLLECTION, operation: "list", ...read, problems: ["invalid_query"] },
  changes: {
    method: "GET",
    path: CHANGES,
    operation: "changes",
    ...read,
    problems: ["invalid_query", "invalid_report", "follower_name_taken", "too_many_followers"]
  },
  followers: {
    method: "GET",
    path: FOLLOWERS,
    operation: "followers",
    ...read,
    problems: ["invalid_query", "not_found"]
  },
  report: {
    method: "POST",
    path: FOLLOWERS,
    operation: "report",
    ...read,
    problems: [
      "malformed_json",
      "invalid_report",
      "stream_not_found",
      "payload_too_large",
      "unsupported_media_type",
      "too_many_reports",
      "too_many_followers"
    ]
  },
  match: { method: "GET", path: MATCH, operation: "match", ...read, problems: ["invalid_query", "not_found"] },
  create: {
    method: "POST",
    path: COLLECTION,
    operation: "create",
    ...write,
    problems: [
      "malformed_json",
      "invalid_route",
      "payload_too_large",
      "request_timeout",
      "unsupported_media_type",
      "route_conflict",
      "invalid_idempotency_key",
      "idempotency_key_in_use",
      "idempotency_key_reused",
      "too_many_idempotency_keys",
      "too_many_methods"
    ]
  },
  batch: {
    method: "POST",
    path: BATCH,
    operation: "batch",
    ...write,
    problems: [
      "malformed_json",
      "invalid_batch",
      "invalid_idempotency_key",
      "idempotency_key_in_use",
      "idempotency_key_reused",
      "too_many_idempotency_keys",
      "invalid_route",
      "invalid_query",
      "payload_too_large",
      "request_timeout",
      "unsupported_media_type",
      "route_not_found",
      "route_conflict",
      "precondition_failed",
      "too_many_methods",
      "not_found"
    ]
  },
  history: { method: "GET", path: HISTORY, operation: "history", ...read, problems: ["invalid_query"] },
  routeHistory: {
    method: "GET",
    path: ROUTE_HISTORY,
    operation: "history",
    ...read,
    problems: ["invalid_query", "route_not_found"]
  },
  restore: {
    method: "POST",
    path: RESTORE,
    operation: "restore",
    ...write,
    problems: [
      "malformed_json",
      "invalid_restore",
      "invalid_query",
      "route_not_found",
      "route_conflict",
      "precondition_failed",
      "payload_too_large",
      "unsupported_media_type",
      "too_many_methods"
    ]
  },
  get: { method: "GET", path: ITEM, operation: "get", ...read, problems: ["route_not_found"] },
  update: {
    method: "PATCH",
    path: ITEM,
    operation: "update",
    ...write,
    problems: [
      "malformed_json",
      "invalid_route",
      "route_not_found",
      "request_timeout",
      "route_conflict",
      "precondition_failed",
      "payload_too_large",
      "unsupported_media_type",
      "too_many_methods"
    ]
  },
  delete: {
    method: "DELETE",
    path: ITEM,
    operation: "remove",
    ...write,
    problems: ["route_not_found", "precondition_failed"]
  }
} as const satisfies Record<string, Endpoint>

/** An endpoint's name: its OpenAPI operation's (`routing.<name>`). */
export type Name = keyof typeof ENDPOINTS

/** What telemetry calls an operation: one per endpoint, and the 405s. */
export type Operation = (typeof ENDPOINTS)[Name]["operation"] | "method_not_allowed"

/**
 * Records an operation's answer (a span, a count, a duration), given where it is known which operation runs and on
 * which route (its path in the table).
 */
export type Instrument = (
  request: Request,
  route: string,
  operation: Operation,
  answer: Effect.Effect<Response>
) => Effect.Effect<Response>

/** The problems every endpoint may answer. */
export const EVERY_ENDPOINT = [
  "invalid_request",
  "unauthenticated",
  "invalid_token",
  "insufficient_scope",
  "method_not_allowed",
  "internal_error",
  "store_unavailable",
  "authenticator_unavailable"
] as const satisfies ReadonlyArray<Problem.Code>

/** The endpoints served on one path, by method, and its `Allow`. */
export interface Resource {
  readonly path: string
  readonly allow: string
  readonly endpoints: ReadonlyMap<string, Name>
  /** Serves a write: on a read-only store, a method it does not serve is refused as a write when it serves GET. */
  readonly writes: boolean
}

const NAMES = Object.keys(ENDPOINTS) as ReadonlyArray<Name>

const resourceOf = (path: string): Resource => {
  const names = NAMES.filter((name) => ENDPOINTS[name].path === path)
  return {
    path,
    allow: names.map((name) => ENDPOINTS[name].method).join(", "),
    endpoints: new Map(names.map((name) => [ENDPOINTS[name].method, name])),
    writes: names.some((name) => ENDPOINTS[name].write)
  }
}

/** Every path served, in the order of its first endpoint. */
export const RESOURCES: ReadonlyArray<Resource> = [...new Set(NAMES.map((name) => ENDPOINTS[name].path))].map(
  resourceOf
)

/** The `Allow` of a path: the methods its endpoints serve, in their order. */
export const allowOf = (path: string): string => RESOURCES.find((resource) => resource.path === path)!.allow

// A path with `{id}`, split around it: the id is what lies between, without a slash (possibly empty).
interface Template {
  readonly resource: Resource
  readonly prefix: string
  readonly suffix: string
}

const STATIC = new Map(RESOURCES.filter(({ path }) => !path.includes("{id}")).map((r) => [r.path, r]))
const TEMPLATES: ReadonlyArray<Template> = RESOURCES.filter(({ path }) => path.includes("{id}")).map((resource) => {
  const at = resource.path.indexOf("{id}")
  return { resource, prefix: resource.path.slice(0, at), suffix: resource.path.slice(at + "{id}".length) }
})

/** The path served at a request's path, with the id it names (`""` for none); `undefined` for a path not served. */
export const resourceAt = (path: string): { readonly resource: Resource; readonly id: string } | undefined => {
  const fixed = STATIC.get(path)
  if (fixed !== undefined) return { resource: fixed, id: "" }
  for (const { prefix, resource, suffix } of TEMPLATES) {
    if (path.length < prefix.length + suffix.length || !path.startsWith(prefix) || !path.endsWith(suffix)) continue
    const id = path.slice(prefix.length, path.length - suffix.length)
    if (!id.includes("/")) return { resource, id }
  }
  return undefined
}
