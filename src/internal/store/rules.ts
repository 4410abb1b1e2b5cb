/**
 * The rules of the route store contract that every store applies the same way: how a created route is made, what
 * conflicts, what a precondition and a patch mean, and what an idempotency key keeps and counts of a create
 * (of a change set: batchKeys.ts). `RouteRepository`
 * re-exports them.
 *
 * @internal
 */
import type { Context } from "effect"
import { Either } from "effect"
import { createHash } from "node:crypto"
import * as Route from "../../Route.js"
import type { FirstAnswer, Precondition, Remembered, RouteIdGenerator } from "../../RouteRepository.js"
import type * as Split from "../../Split.js"
import * as RouteFields from "../route/fields.js"
import { equal as sameSplit } from "../route/split.js"
import * as When from "../route/when.js"
import { OutsidePrefixes, PreconditionFailed, routeConflict } from "./errors.js"

/**
 * The most distinct methods a store holds: a create or update that would add one more fails with `TooManyMethods`.
 * Every method a path serves goes into the `Allow` header of a 405 (RFC 9110 §15.5.6), so this bounds it: at most 129
 * methods (`HEAD` comes with `GET`) of at most 32 characters and their ", " separators, about 4.4 KB, well under the
 * 8 KiB a client reads in one header.
 *
 * @since 0.3.0
 */
export const MAX_METHODS: number = 128

/**
 * What a remembered key counts against its principal's byte budget besides its own bytes: about what either store
 * holds for a key besides its text (its fingerprint, the first answer's route id, creation time and revision, the
 * expiry, and the store's own bookkeeping; measured by bench/idempotency.ts).
 */
export const IDEMPOTENCY_KEY_OVERHEAD_BYTES = 256

/**
 * Equal exactly for equal create inputs: a SHA-256 digest (base64url) of the input in a canonical form, so the order
 * of a body's fields, its whitespace and an omitted `middleware` make no difference. A store keeps it with a key, and a
 * key used again with another input fails with `IdempotencyKeyReused`.
 *
 * @since 0.3.0
 */
export const fingerprint = (input: Route.CreateRoute): string => {
  const optional = optionalOf(input)
  // A route without the fields of docs/router.md keeps the digest of earlier releases, so its remembered keys still match.
  const fields = [input.method, input.path, input.middleware, input.handler, ...(optional === NONE ? [] : [optional])]
  return createHash("sha256").update(JSON.stringify(fields), "utf8").digest("base64url")
}

/**
 * The fields of docs/router.md a route keeps, only when not at their defaults: `enabled` only when `false`, a
 * description not empty, tags not empty.
 */
export interface Optional {
  readonly enabled?: false
  readonly split?: Split.Split
  readonly description?: string
  readonly tags?: ReadonlyArray<string>
  readonly when?: When.When
}

/** The optional fields as an input, a route or a patch applied may give them. */
export interface OptionalInput {
  readonly enabled?: boolean | undefined
  readonly split?: Split.Split | null | undefined
  readonly description?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly when?: When.When | null | undefined
}

/** What a route keeps of the optional fields of `fields` (an input, a route, a patch applied). */
export const optionalOf = (fields: OptionalInput): Optional => {
  const described = fields.description !== undefined && fields.description !== ""
  const tagged = fields.tags !== undefined && fields.tags.length > 0
  if (!described && !tagged && fields.when == null) {
    return fields.enabled === false
      ? fields.split == null ? DISABLED : { enabled: false, split: fields.split }
      : fields.split == null
      ? NONE
      : { split: fields.split }
  }
  return {
    ...(fields.enabled === false ? DISABLED : NONE),
    ...(fields.split == null ? NONE : { split: fields.split }),
    ...(described ? { description: fields.description } : NONE),
    ...(tagged ? { tags: fields.tags } : NONE),
    ...(fields.when == null ? NONE : { when: fields.when })
  }
}

const NONE: Optional = {}
const DISABLED: Optional = { enabled: false }

/** The optional fields of `route` once `patch` is applied: `split: null` and `when: null` remove theirs. */
export const patchedOptional = (route: Route.Route, patch: Route.RoutePatch): Optional =>
  optionalOf({
    enabled: patch.enabled ?? route.enabled,
    split: patch.split === undefined ? route.split : patch.split,
    description: patch.description ?? route.description,
    tags: patch.tags ?? route.tags,
    when: patch.when === undefined ? route.when : patch.when
  })

const utf8 = new TextEncoder()

/**
 * What one remembered key counts against its principal's byte budget (`Idempotency.maxBytes`): its own bytes in
 * UTF-8, and `IDEMPOTENCY_KEY_OVERHEAD_BYTES` for what is kept with it.
 *
 * @since 0.3.0
 */
export const keySize = (key: string): number => utf8.encode(key).byteLength + IDEMPOTENCY_KEY_OVERHEAD_BYTES

/**
 * What a store keeps of `outcome`.
 *
 * @since 0.3.0
 */
export const firstAnswerOf = (outcome: Remembered["outcome"]): FirstAnswer =>
  Either.match(outcome, {
    onLeft: (conflict) => ({ routeId: conflict.conflictingRouteId, createdAt: undefined, revision: undefined }),
    onRight: (route) => ({ routeId: route.id, createdAt: route.createdAt.getTime(), revision: route.revision })
  })

/**
 * The first answer again, from what the store kept of it and the input of the request that repeats it: the route as it
 * was created (whatever happened to it since), or the conflict that refused it.
 *
 * @since 0.3.0
 */
export const answerAgain = (input: Route.CreateRoute, first: FirstAnswer): Remembered["outcome"] =>
  first.createdAt === undefined || first.revision === undefined
    ? Either.left(
      routeConflict(input.method, input.path, first.routeId, input.when)
    )
    : Either.right(
      new Route.StoredRoute({
        id: first.routeId as Route.RouteId,
        method: input.method,
        path: input.path,
        middleware: input.middleware,
        handler: input.handler,
        createdAt: new Date(first.createdAt),
        ...optionalOf(input),
        revision: first.revision
      }, true)
    )

// A create input as a route has it, its id stamped with `millis` and `createdAt` the same instant.
const routeFields = (ids: Context.Tag.Service<RouteIdGenerator>, input: Route.CreateRoute, millis: number) => ({
  id: ids.next(millis),
  method: input.method,
  path: input.path,
  middleware: input.middleware,
  handler: input.handler,
  createdAt: new Date(millis),
  ...optionalOf(input)
})

/**
 * The route a store will keep for a create input, before the store gives it its revision: its id from `ids` stamped
 * with `millis`, and `createdAt` the same instant. Stores read `millis` from Effect's `Clock` (`Effect.clockWith`),
 * so `TestClock` controls it.
 *
 * @since 0.1.0
 */
export const makeRoute = (
  ids: Context.Tag.Service<RouteIdGenerator>,
  input: Route.CreateRoute,
  millis: number
): Route.Route => new Route.Route(routeFields(ids, input, millis), true)

/**
 * The route a store keeps for a create input at `revision`, built in one step: a store that decides the revision
 * with the route (the memory store) spares constructing the `Route` too.
 *
 * @since 0.4.0
 */
export const makeStoredRoute = (
  ids: Context.Tag.Service<RouteIdGenerator>,
  input: Route.CreateRoute,
  millis: number,
  revision: number
): Route.StoredRoute => storedRoute(ids.next(millis), inputFields(input), new Date(millis), revision)

// The fields of a create input as a route keeps them.
const inputFields = (input: Route.CreateRoute): Fields => ({
  method: input.method,
  path: input.path,
  middleware: input.middleware,
  handler: input.handler,
  ...optionalOf(input)
})

/** The fields a store gives a route besides its id, creation time and revision. */
export type Fields = Pick<Route.Route, "method" | "path" | "middleware" | "handler"> & Optional

// A constructor whose instances are `StoredRoute`s (its prototype is theirs) and set nothing but their own fields, in
// their order: V8 then keeps all seven inside the object, as it does for the class's own (`Object.create` would not).
// The fields of docs/router.md are set only when present, so a route without them keeps the seven-field shape.
const StoredRouteOf = function(
  this: Record<string, unknown>,
  id: Route.RouteId,
  fields: Fields,
  createdAt: Date,
  revision: number
) {
  this.id = id
  this.method = fields.method
  this.path = fields.path
  this.middleware = fields.middleware
  this.handler = fields.handler
  this.createdAt = createdAt
  this.revision = revision
  if (fields.enabled === false) this.enabled = false
  if (fields.split !== undefined) this.split = fields.split
  if (fields.description !== undefined) this.description = fields.description
  if (fields.tags !== undefined) this.tags = fields.tags
  if (fields.when !== undefined) this.when = fields.when
} as unknown as new(
  id: Route.RouteId,
  fields: Fields,
  createdAt: Date,
  revision: number
) => Route.StoredRoute
StoredRouteOf.prototype = Route.StoredRoute.prototype

/**
 * A `StoredRoute` of fields already valid, as `new StoredRoute(fields, true)` makes it (its prototype, then its own
 * fields in their order), without the class's two copies of the fields and its look for defaults (a StoredRoute has
 * none): the memory store makes one per change, and the constructor cost a create about 3% (bench/core.ts).
 *
 * @since 0.4.0
 */
export const storedRoute = (
  id: Route.RouteId,
  fields: Fields,
  createdAt: Date,
  revision: number
): Route.StoredRoute => new StoredRouteOf(id, fields, createdAt, revision)

/**
 * The route `patch` makes of `route`, at `revision`: the fields it gives replace the stored ones, `id` and `createdAt`
 * stay.
 *
 * @since 0.5.0
 */
export const patchedRoute = (route: Route.StoredRoute, patch: Route.RoutePatch, revision: number): Route.StoredRoute =>
  storedRoute(
    route.id,
    {
      method: patch.method ?? route.method,
      path: patch.path ?? route.path,
      middleware: patch.middleware ?? route.middleware,
      handler: patch.handler ?? route.handler,
      ...patchedOptional(route, patch)
    },
    route.createdAt,
    revision
  )

/**
 * The key under which two conflicting routes collide: method, shape and (0.5.0) conditions as a set (their canonical
 * JSON, after a space; nothing for a route without conditions, whose key is as before).
 *
 * @since 0.1.0
 */
export const conflictKey = (method: string, path: Route.RoutePath, when?: When.When | undefined): string =>
  when === undefined ? `${method} ${Route.shapeOf(path)}` : `${method} ${Route.shapeOf(path)} ${When.keyOf(when)}`

/**
 * `true` when a route at `revision` meets the precondition: there is none, or it names that revision.
 *
 * @since 0.2.0
 */
export const meetsPrecondition = (precondition: Precondition | undefined, revision: number): boolean =>
  precondition?.ifMatch === undefined || precondition.ifMatch.includes(revision)

/**
 * `true` when `path` is one of `prefixes` or starts with one followed by `/` (`/payments` holds `/payments` and
 * `/payments/:id`, not `/paymentsx`).
 *
 * @since 0.4.0
 */
export const underPrefixes = (prefixes: ReadonlyArray<string>, path: string): boolean =>
  prefixes.some((prefix) => path === prefix || (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47))

/**
 * `true` when a route with the stored `path` meets the precondition's path prefixes: there are none, or it is under
 * one of them.
 *
 * @since 0.4.0
 */
export const withinPrefixes = (precondition: Precondition | undefined, path: string): boolean =>
  precondition?.pathPrefixes === undefined || underPrefixes(precondition.pathPrefixes, path)

/**
 * Why the precondition refuses a change of the stored `route`: its path prefixes first, then its revisions; `undefined`
 * when it passes.
 *
 * @since 0.4.0
 */
export const barredBy = (
  precondition: Precondition | undefined,
  route: Route.StoredRoute
): OutsidePrefixes | PreconditionFailed | undefined =>
  !withinPrefixes(precondition, route.path)
    ? new OutsidePrefixes({ id: route.id, path: route.path }, true)
    : !meetsPrecondition(precondition, route.revision)
    ? new PreconditionFailed({ id: route.id, revision: route.revision }, true)
    : undefined

/**
 * `true` when `patch` gives some field a value other than the route's: applying it is a change. A patch that only
 * repeats stored values changes nothing, so it keeps the route's revision.
 *
 * @since 0.2.0
 */
export const patchChanges = (route: Route.Route, patch: Route.RoutePatch): boolean =>
  (patch.method !== undefined && patch.method !== route.method) ||
  (patch.path !== undefined && patch.path !== route.path) ||
  (patch.handler !== undefined && patch.handler !== route.handler) ||
  (patch.middleware !== undefined && !RouteFields.sameEntries(patch.middleware, route.middleware)) ||
  (patch.enabled !== undefined && patch.enabled !== (route.enabled ?? true)) ||
  (patch.split !== undefined && !sameSplit(patch.split ?? undefined, route.split)) ||
  (patch.description !== undefined && patch.description !== (route.description ?? "")) ||
  (patch.tags !== undefined && !RouteFields.sameTags(patch.tags, route.tags)) ||
  (patch.when !== undefined && !When.equal(patch.when ?? undefined, route.when))

/**
 * The newest log entries the memory store keeps at least, by default (`RouteRepository.MemoryOptions`).
 *
 * @since 0.4.0
 */
export const DEFAULT_MEMORY_HISTORY_CAPACITY: number = 10_000

/** The problem with a `historyCapacity` option, or `undefined` when it is a whole number from 1 to 2^31 − 1. */
export const checkHistoryCapacity = (value: number): string | undefined =>
  Number.isSafeInteger(value) && value >= 1 && value <= 2 ** 31 - 1
    ? undefined
    : `historyCapacity must be a whole number from 1 to ${2 ** 31 - 1} (got ${String(value)})`

/**
 * What a restore makes a route: the fields of the route right after the change it goes back to, as a patch (the
 * fields of docs/router.md at their defaults given too, so that they are reset) and, for a deleted route, as a create input.
 */
export const restoredFields = (after: Route.Route) => ({
  input: inputFields(after),
  method: after.method,
  path: after.path,
  middleware: after.middleware,
  handler: after.handler,
  enabled: after.enabled ?? true,
  split: after.split ?? null,
  description: after.description ?? "",
  tags: after.tags ?? [],
  when: after.when ?? null
} satisfies Route.RoutePatch & { readonly input: Route.CreateRoute })

/**
 * Whether a route's path, handler, one of its middleware names, its description or one of its tags contains `text` (a
 * listing's `q`). Both are well-formed UTF-16 (a description holds no lone surrogate), so comparing code units is
 * comparing bytes.
 */
export const containsText = (route: Route.Route, text: string): boolean =>
  route.path.includes(text) || route.handler.includes(text) ||
  route.middleware.some((entry) => RouteFields.nameOf(entry).includes(text)) ||
  (route.description !== undefined && route.description.includes(text)) ||
  (route.tags !== undefined && route.tags.some((tag) => tag.includes(text)))

/**
 * A store identity as the change stream's cursors carry it: 16 hexadecimal digits (a Postgres store keeps one in its
 * database; a memory store draws one per instance). Drawn from `Math.random`: it tells stores apart, it guards nothing.
 */
export const newStoreId = (): string => {
  let id = ""
  while (id.length < 16) id += Math.floor(Math.random() * 16).toString(16)
  return id
}
