/**
 * The `RouteRepository` service: where routes are stored, and the embedded in-memory store.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Either, Exit, Layer, Schema } from "effect"
import { createHash } from "node:crypto"
import * as Limits from "./internal/limits.js"
import * as Now from "./internal/now.js"
import * as Route from "./Route.js"

/**
 * A stored route already has the same method and shape; `conflictingRouteId` names it.
 *
 * @since 0.1.0
 */
export class RouteConflict extends Schema.TaggedError<RouteConflict>()("RouteConflict", {
  method: Schema.String,
  path: Schema.String,
  conflictingRouteId: Schema.String
}) {
  override get message(): string {
    return `${this.method} ${this.path} has the same method and shape as route ${this.conflictingRouteId}`
  }
}

/**
 * No route has the id (including ids that could never exist).
 *
 * @since 0.1.0
 */
export class RouteNotFound extends Schema.TaggedError<RouteNotFound>()("RouteNotFound", {
  id: Schema.String
}) {
  override get message(): string {
    return `no route has the id ${JSON.stringify(this.id)}`
  }
}

/**
 * The store could not be reached or did not answer in time. Nothing was written.
 *
 * @since 0.1.0
 */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return `the route store is unavailable: ${this.reason}`
  }
}

/**
 * `If-Match` failed: the route's current revision is none of the ones the caller named. Nothing changed.
 *
 * @since 0.2.0
 */
export class PreconditionFailed extends Schema.TaggedError<PreconditionFailed>()("PreconditionFailed", {
  id: Schema.String,
  revision: Schema.Number
}) {
  override get message(): string {
    return `route ${this.id} is at revision ${this.revision}, which the precondition does not name`
  }
}

/**
 * A create with this `Idempotency-Key` was first made with another body (another fingerprint). Nothing was written.
 *
 * @since 0.3.0
 */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  key: Schema.String
}) {
  override get message(): string {
    return `the idempotency key ${JSON.stringify(this.key)} was first used with another request`
  }
}

/**
 * A create with this `Idempotency-Key` is still running (in this process or another). Nothing was written.
 *
 * @since 0.3.0
 */
export class IdempotencyKeyInUse extends Schema.TaggedError<IdempotencyKeyInUse>()("IdempotencyKeyInUse", {
  key: Schema.String
}) {
  override get message(): string {
    return `a request with the idempotency key ${JSON.stringify(this.key)} is still running`
  }
}

/**
 * A create with a new idempotency key would take its principal past the keys or bytes it may hold at once (see
 * `Idempotency`). Nothing was written. Keys held are counted without the expired ones; `retryAfterMillis` is the
 * time until the oldest of them expires.
 *
 * @since 0.3.0
 */
export class TooManyIdempotencyKeys extends Schema.TaggedError<TooManyIdempotencyKeys>()("TooManyIdempotencyKeys", {
  key: Schema.String,
  /** The keys the principal holds, and the bytes they count (`keySize`). */
  keys: Schema.Number,
  bytes: Schema.Number,
  maxKeys: Schema.Number,
  maxBytes: Schema.Number,
  retryAfterMillis: Schema.Number
}) {
  override get message(): string {
    return `the principal holds ${this.keys} idempotency keys of ${this.bytes} bytes; one more would pass its limit ` +
      `of ${this.maxKeys} keys or ${this.maxBytes} bytes`
  }
}

/**
 * A create or an update would store a method no stored route has while the registry already holds `limit` distinct
 * methods (`MAX_METHODS`). Nothing was written.
 *
 * @since 0.3.0
 */
export class TooManyMethods extends Schema.TaggedError<TooManyMethods>()("TooManyMethods", {
  method: Schema.String,
  limit: Schema.Number
}) {
  override get message(): string {
    return `the registry stores ${this.limit} distinct methods, the most it holds, and ${this.method} is not one of them`
  }
}

/**
 * The most distinct methods a store holds: a create or update that would add one more fails with `TooManyMethods`.
 * It bounds the `Allow` header of a 405, which lists every method a path serves: 129 methods (`HEAD` comes with
 * `GET`) of at most 32 characters fit in about 4.4 KB.
 *
 * @since 0.3.0
 */
export const MAX_METHODS: number = Limits.MAX_METHODS

/**
 * What makes a create idempotent: the client's key, scoped to the principal that sent it, how long the first answer
 * is remembered, and how many keys the principal may hold at once. Two requests with one key are the same request
 * when their inputs are equal (`fingerprint`).
 *
 * @since 0.3.0
 */
export interface Idempotency {
  readonly key: string
  /** The authenticated principal's id: two principals' equal keys are different keys. */
  readonly principal: string
  /** Counted from the first answer; after it the key is forgotten and behaves as new. */
  readonly expiresAfter: Duration.Duration
  /**
   * The most keys the principal may hold at once, expired ones not counted: a create with a new key past it fails
   * with `TooManyIdempotencyKeys`, and writes nothing.
   */
  readonly maxKeys: number
  /** The most bytes the principal's keys may count at once (`keySize` each); past it, as past `maxKeys`. */
  readonly maxBytes: number
}

/**
 * The first answer to a create with an idempotency key: the route it stored, or the conflict that refused it.
 *
 * @since 0.3.0
 */
export interface Remembered {
  readonly outcome: Either.Either<Route.StoredRoute, RouteConflict>
  /** `true` when this is the first answer given again; `false` when this call decided it. */
  readonly replayed: boolean
}

/**
 * What a store keeps of a first answer. Only a request with an equal input (`fingerprint`) is given it again, so the
 * input says the rest: the method, path, middleware and handler of the route created, or of the create refused.
 *
 * @since 0.3.0
 */
export interface FirstAnswer {
  /** The id of the route created, or of the route the create conflicted with. */
  readonly routeId: string
  /** The created route's `createdAt`, in epoch milliseconds; `undefined` when the create conflicted. */
  readonly createdAt: number | undefined
  /** The created route's revision; `undefined` when the create conflicted. */
  readonly revision: number | undefined
}

/**
 * Equal exactly for equal create inputs: a SHA-256 digest (base64url) of the input in a canonical form, so the order
 * of a body's fields, its whitespace and an omitted `middleware` make no difference. A store keeps it with a key, and a
 * key used again with another input fails with `IdempotencyKeyReused`.
 *
 * @since 0.3.0
 */
export const fingerprint = (input: Route.CreateRoute): string =>
  createHash("sha256")
    .update(JSON.stringify([input.method, input.path, input.middleware, input.handler]), "utf8")
    .digest("base64url")

const utf8 = new TextEncoder()

/**
 * What one remembered key counts against its principal's byte budget (`Idempotency.maxBytes`): its own bytes in
 * UTF-8, and `IDEMPOTENCY_KEY_OVERHEAD_BYTES` for what is kept with it.
 *
 * @since 0.3.0
 */
export const keySize = (key: string): number => utf8.encode(key).byteLength + Limits.IDEMPOTENCY_KEY_OVERHEAD_BYTES

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
      new RouteConflict({ method: input.method, path: input.path, conflictingRouteId: first.routeId }, true)
    )
    : Either.right(
      new Route.StoredRoute({
        id: first.routeId as Route.RouteId,
        method: input.method,
        path: input.path,
        middleware: input.middleware,
        handler: input.handler,
        createdAt: new Date(first.createdAt),
        revision: first.revision
      }, true)
    )

/**
 * A condition on the route's current revision, checked atomically with the change it guards. `ifMatch` lists the
 * revisions the caller accepts (none matching fails with `PreconditionFailed`); absent, any revision will do.
 *
 * @since 0.2.0
 */
export interface Precondition {
  readonly ifMatch?: ReadonlyArray<number> | undefined
}

/**
 * One page of a listing: routes in ascending id order, the filters combined with AND.
 *
 * @since 0.2.0
 */
export interface ListQuery {
  /** How many routes at most, 1–1000. */
  readonly limit: number
  /** Only routes whose id sorts after this one (the last id of the previous page). */
  readonly after?: string | undefined
  /** Only routes with exactly this method. */
  readonly method?: string | undefined
  /** Only routes whose path starts with this string, compared byte for byte. */
  readonly pathPrefix?: string | undefined
  /** Only routes with exactly this handler. */
  readonly handler?: string | undefined
  /** Only routes whose middleware list contains this name. */
  readonly middleware?: string | undefined
}

/**
 * @since 0.2.0
 */
export interface Page {
  readonly items: ReadonlyArray<Route.StoredRoute>
  /** `true` exactly when a route matching the filters sorts after the last item. */
  readonly hasMore: boolean
}

/**
 * What changed in a store after a cursor (see `ChangeFeed`).
 *
 * @since 0.2.0
 */
export interface Changes {
  /** The position these changes bring a reader to: the cursor of the next read. */
  readonly cursor: string
  /** Routes created or updated since the cursor read, each as it is now (its newest revision). */
  readonly upserted: ReadonlyArray<Route.StoredRoute>
  /** Ids of the routes removed since the cursor read. Ids are never reused, so a removed route stays removed. */
  readonly removed: ReadonlyArray<string>
  /**
   * `false` when the store no longer holds the whole history since the cursor (it was pruned while the reader was
   * away): the reader must load every route again from a new cursor. `upserted` and `removed` are then empty.
   */
  readonly complete: boolean
}

/**
 * How a store shared by several processes tells each of them what the others changed. A reader takes a `cursor`,
 * loads every route, then reads `since` that cursor again and again: each read gives exactly the changes committed
 * after the previous one, whatever order their transactions started in, and the reader ends equal to the store.
 *
 * @since 0.2.0
 */
export interface ChangeFeed {
  /** A position at the store's present: every change committed after it is in the next `since`. */
  readonly cursor: Effect.Effect<string, StoreUnavailable>
  /** The changes committed after `cursor`, and the cursor to read from next. */
  readonly since: (cursor: string) => Effect.Effect<Changes, StoreUnavailable>
  /** How often a reader reads `since` when nothing wakes it. */
  readonly pollInterval: Duration.Duration
  /**
   * Present when the store can tell of a commit as it happens: runs until interrupted, giving `listener` the changes
   * other processes announce once they committed them, and calling `listener.wake` when it heard of a change it
   * cannot give, and once whenever it starts hearing again (what was said in between is lost). Hints only: the
   * reader still reads `since` every poll interval, which is what makes it complete.
   */
  readonly listen?: ((listener: ChangeListener) => Effect.Effect<never>) | undefined
}

/**
 * What a `ChangeFeed` tells of as it hears of it.
 *
 * @since 0.2.0
 */
export interface ChangeListener {
  /** Routes as a committed change left them (a reader keeps the newest revision), and ids of removed routes. */
  readonly apply: (upserted: ReadonlyArray<Route.StoredRoute>, removed: ReadonlyArray<string>) => void
  /** Something changed: read `since` now. */
  readonly wake: () => void
}

/**
 * Where routes live. Every change is atomic: it happens whole or not at all, and a precondition or a conflict is
 * decided together with the write it guards.
 *
 * @since 0.1.0
 */
export class RouteRepository extends Context.Tag("route-registry/RouteRepository")<RouteRepository, {
  /**
   * Stores a new route with a fresh id and `createdAt`; fails if a route with the same method and shape exists, or if
   * its method would be one more than the `MAX_METHODS` distinct methods stored.
   */
  readonly create: (
    input: Route.CreateRoute
  ) => Effect.Effect<Route.StoredRoute, RouteConflict | TooManyMethods | StoreUnavailable>
  /** The route with that id; any string is accepted, and one that is not a route id is simply not found. */
  readonly findById: (id: string) => Effect.Effect<Route.StoredRoute, RouteNotFound | StoreUnavailable>
  /** One page of routes in ascending id order (keyset pagination: one indexed range read). */
  readonly list: (query: ListQuery) => Effect.Effect<Page, StoreUnavailable>
  /**
   * Replaces the fields `patch` gives, keeping `id` and `createdAt`. A patch that changes nothing leaves the route
   * and its revision as they are. Decided in this order: not found, precondition, conflict, then the method bound (a
   * new method past `MAX_METHODS` distinct ones; a conflict names a stored method, so the two never meet).
   */
  readonly update: (
    id: string,
    patch: Route.RoutePatch,
    precondition?: Precondition
  ) => Effect.Effect<
    Route.StoredRoute,
    RouteNotFound | PreconditionFailed | RouteConflict | TooManyMethods | StoreUnavailable
  >
  /** Removes the route; its method and shape are free again at once. Not found first, then the precondition. */
  readonly remove: (
    id: string,
    precondition?: Precondition
  ) => Effect.Effect<void, RouteNotFound | PreconditionFailed | StoreUnavailable>
  /**
   * Offered by a store that keeps its routes in memory: the route with that id, read at once (`undefined` when
   * there is none). The HTTP core uses it to answer a lookup without starting a fiber; `findById` stays the way to
   * read in an Effect.
   */
  readonly unsafeFindById?: (id: string) => Route.StoredRoute | undefined
  /**
   * Offered by a store that other processes can change (the Postgres store): how to follow their changes. A store
   * only this process changes has none.
   */
  readonly changes?: ChangeFeed | undefined
  /**
   * Offered by a store that remembers idempotency keys (both stores of the library): `create` at most once per key.
   * The first call with a key creates (or is refused with a conflict) and remembers that outcome together with the
   * write, atomically; a later call with the key and an equal input (`fingerprint`) gives it again (`replayed`), one
   * with another input fails with `IdempotencyKeyReused`, one while the first is running with `IdempotencyKeyInUse`.
   * A new key that would take its principal past `maxKeys` or `maxBytes` fails with `TooManyIdempotencyKeys`. A
   * failure (`TooManyIdempotencyKeys`, `TooManyMethods`, `StoreUnavailable`) remembers nothing, so a retry runs anew.
   * A store keeps what `firstAnswerOf` gives, no more, and answers again with `answerAgain`.
   */
  readonly createIdempotent?: (
    input: Route.CreateRoute,
    idempotency: Idempotency
  ) => Effect.Effect<
    Remembered,
    IdempotencyKeyReused | IdempotencyKeyInUse | TooManyIdempotencyKeys | TooManyMethods | StoreUnavailable
  >
}>() {}

/**
 * Makes route ids. The default stamps a UUID version 7 with the time from Effect's `Clock`. A store takes the
 * generator in context when it is built, so tests provide their own to its layer to get predictable ids.
 *
 * @since 0.1.0
 */
export class RouteIdGenerator extends Context.Reference<RouteIdGenerator>()("route-registry/RouteIdGenerator", {
  defaultValue: (): { readonly next: (millis: number) => Route.RouteId } => ({ next: Route.makeRouteId })
}) {}

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
): Route.Route =>
  new Route.Route({
    id: ids.next(millis),
    method: input.method,
    path: input.path,
    middleware: input.middleware,
    handler: input.handler,
    createdAt: new Date(millis)
  }, true)

/**
 * The key under which two conflicting routes collide: method and shape.
 *
 * @since 0.1.0
 */
export const conflictKey = (method: string, path: Route.RoutePath): string => `${method} ${Route.shapeOf(path)}`

/**
 * `true` when a route at `revision` meets the precondition: there is none, or it names that revision.
 *
 * @since 0.2.0
 */
export const meetsPrecondition = (precondition: Precondition | undefined, revision: number): boolean =>
  precondition?.ifMatch === undefined || precondition.ifMatch.includes(revision)

const sameNames = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && a.every((name, i) => name === b[i])

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
  (patch.middleware !== undefined && !sameNames(patch.middleware, route.middleware))

// ---------------------------------------------------------------------------------------------------------------
// The in-memory store
// ---------------------------------------------------------------------------------------------------------------

// Ids kept in ascending order (JavaScript string order: byte order for the ASCII ids stores make). Ids are UUIDv7,
// so an insert is nearly always an append, but a replaced RouteIdGenerator may give any order.

/** The position of the first id greater than `after` (0 without one): where a page after it starts. */
const firstAfter = (ids: ReadonlyArray<string>, after: string | undefined): number => {
  if (after === undefined) return 0
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

/** Sorted ids under each value of one field: the routes a filter on that field can match, already in page order. */
type Postings = Map<string, Array<string>>

const post = (postings: Postings, key: string, id: string): void => {
  const ids = postings.get(key)
  if (ids === undefined) postings.set(key, [id])
  else insertSorted(ids, id)
}

const unpost = (postings: Postings, key: string, id: string): void => {
  const ids = postings.get(key)
  if (ids === undefined) return
  removeSorted(ids, id)
  if (ids.length === 0) postings.delete(key)
}

const NONE: ReadonlyArray<string> = []

/** Everything the memory store holds. Every change updates all of it synchronously, so readers never see it torn. */
interface Memory {
  readonly byId: Map<string, Route.StoredRoute>
  readonly idByKey: Map<string, string>
  /** Every id, ascending. */
  readonly ids: Array<string>
  readonly byMethod: Postings
  readonly byHandler: Postings
  readonly byMiddleware: Postings
  /** The revision of the store's last change. */
  revision: number
}

// `key`: the route's conflict key, which the caller computed to check for a conflict.
const addRoute = (memory: Memory, route: Route.StoredRoute, key: string): void => {
  memory.byId.set(route.id, route)
  memory.idByKey.set(key, route.id)
  insertSorted(memory.ids, route.id)
  post(memory.byMethod, route.method, route.id)
  post(memory.byHandler, route.handler, route.id)
  for (const name of route.middleware) post(memory.byMiddleware, name, route.id)
}

const dropRoute = (memory: Memory, route: Route.StoredRoute): void => {
  memory.byId.delete(route.id)
  memory.idByKey.delete(conflictKey(route.method, route.path))
  removeSorted(memory.ids, route.id)
  unpost(memory.byMethod, route.method, route.id)
  unpost(memory.byHandler, route.handler, route.id)
  for (const name of route.middleware) unpost(memory.byMiddleware, name, route.id)
}

/** Replaces a route by its updated form; the id stays, so only the entries of changed fields move. */
const replaceRoute = (memory: Memory, before: Route.StoredRoute, after: Route.StoredRoute): void => {
  const id = after.id
  memory.byId.set(id, after)
  memory.idByKey.delete(conflictKey(before.method, before.path))
  memory.idByKey.set(conflictKey(after.method, after.path), id)
  if (before.method !== after.method) {
    unpost(memory.byMethod, before.method, id)
    post(memory.byMethod, after.method, id)
  }
  if (before.handler !== after.handler) {
    unpost(memory.byHandler, before.handler, id)
    post(memory.byHandler, after.handler, id)
  }
  for (const name of before.middleware) if (!after.middleware.includes(name)) unpost(memory.byMiddleware, name, id)
  for (const name of after.middleware) if (!before.middleware.includes(name)) post(memory.byMiddleware, name, id)
}

const matches = (route: Route.Route, query: ListQuery): boolean =>
  (query.method === undefined || route.method === query.method) &&
  (query.handler === undefined || route.handler === query.handler) &&
  (query.middleware === undefined || route.middleware.includes(query.middleware as Route.MiddlewareName)) &&
  // Paths are ASCII, so comparing UTF-16 code units is comparing bytes.
  (query.pathPrefix === undefined || route.path.startsWith(query.pathPrefix))

/** The shortest sorted id list that holds every route the query can match: all ids, or a filter's postings. */
const candidates = (memory: Memory, query: ListQuery): ReadonlyArray<string> => {
  let shortest: ReadonlyArray<string> = memory.ids
  const narrow = (postings: Postings, key: string | undefined) => {
    if (key === undefined) return
    const ids = postings.get(key) ?? NONE
    if (ids.length < shortest.length) shortest = ids
  }
  narrow(memory.byMethod, query.method)
  narrow(memory.byHandler, query.handler)
  narrow(memory.byMiddleware, query.middleware)
  return shortest
}

const listMemory = (memory: Memory, query: ListQuery): Page => {
  const ids = candidates(memory, query)
  const items: Array<Route.StoredRoute> = []
  for (let i = firstAfter(ids, query.after); i < ids.length; i++) {
    const route = memory.byId.get(ids[i]!)!
    if (!matches(route, query)) continue
    if (items.length === query.limit) return { items, hasMore: true }
    items.push(route)
  }
  return { items, hasMore: false }
}

const patched = (route: Route.StoredRoute, patch: Route.RoutePatch, revision: number): Route.StoredRoute =>
  new Route.StoredRoute({
    id: route.id,
    method: patch.method ?? route.method,
    path: patch.path ?? route.path,
    middleware: patch.middleware ?? route.middleware,
    handler: patch.handler ?? route.handler,
    createdAt: route.createdAt,
    revision
  }, true)

const notFound = (id: string) => Effect.fail(new RouteNotFound({ id }, true))

const preconditionFailed = (route: Route.StoredRoute) =>
  Effect.fail(new PreconditionFailed({ id: route.id, revision: route.revision }, true))

/** An idempotency key the memory store remembers: the first request's fingerprint, its answer, until `expiresAt`. */
interface KeptKey extends FirstAnswer {
  readonly fingerprint: string
  readonly expiresAt: number
  /** What it counts against its principal's byte budget (`keySize`). */
  readonly size: number
}

/** One principal's keys, in the order they were stored, and what they count. */
interface PrincipalKeys {
  readonly keys: Map<string, KeptKey>
  bytes: number
  /** The latest expiry of its keys: once it has passed, every key of the principal has expired. */
  latestExpiry: number
}

const forgetKey = (held: PrincipalKeys, key: string, kept: KeptKey): void => {
  held.keys.delete(key)
  held.bytes -= kept.size
}

// Keys are stored in order, so with one lifetime for all the oldest come first, and forgetting stops at the first
// live key. A key stored with a shorter lifetime than the ones before it stays until they go (or `forgetAllExpired`).
const forgetExpiredPrefix = (held: PrincipalKeys, now: number): void => {
  for (const [key, kept] of held.keys) {
    if (kept.expiresAt > now) return
    forgetKey(held, key, kept)
  }
}

// Forgets every expired key of the principal; the earliest expiry of the keys left (Infinity when none is).
const forgetAllExpired = (held: PrincipalKeys, now: number): number => {
  let earliest = Infinity
  for (const [key, kept] of held.keys) {
    if (kept.expiresAt <= now) forgetKey(held, key, kept)
    else earliest = Math.min(earliest, kept.expiresAt)
  }
  return earliest
}

// Principals are kept in the order they last stored a key: the ones whose every key has expired come first and are
// forgotten whole, so a principal that stops sending keys leaves nothing behind.
const forgetIdlePrincipals = (principals: Map<string, PrincipalKeys>, now: number): void => {
  for (const [principal, held] of principals) {
    if (held.latestExpiry > now) return
    principals.delete(principal)
  }
}

// Refuses a new key of `size` bytes past the principal's bounds; expired keys are forgotten first, so they never count.
const overLimit = (
  held: PrincipalKeys,
  idempotency: Idempotency,
  size: number,
  now: number
): TooManyIdempotencyKeys | undefined => {
  const fits = () => held.keys.size < idempotency.maxKeys && held.bytes + size <= idempotency.maxBytes
  if (fits()) return undefined
  const earliest = forgetAllExpired(held, now)
  if (fits()) return undefined
  return new TooManyIdempotencyKeys({
    key: idempotency.key,
    keys: held.keys.size,
    bytes: held.bytes,
    maxKeys: idempotency.maxKeys,
    maxBytes: idempotency.maxBytes,
    // Infinity only when the principal holds no key yet: a single key larger than the byte budget.
    retryAfterMillis: Number.isFinite(earliest) ? earliest - now : 0
  }, true)
}

/**
 * The in-memory store: O(1) get and conflict check; a page is a binary search to the cursor, then a walk along the
 * shortest of the sorted id lists its filters select (all ids, or those of one method, handler or middleware name).
 * Every change decides its checks and writes without yielding, so of concurrent conflicting changes exactly one wins.
 *
 * @since 0.1.0
 */
export const makeMemory: Effect.Effect<Context.Tag.Service<RouteRepository>> = Effect.map(RouteIdGenerator, (ids) => {
  const memory: Memory = {
    byId: new Map(),
    idByKey: new Map(),
    ids: [],
    byMethod: new Map(),
    byHandler: new Map(),
    byMiddleware: new Map(),
    revision: 0
  }
  const principals = new Map<string, PrincipalKeys>()
  const conflict = (method: string, path: string, conflictingRouteId: string) =>
    Effect.fail(new RouteConflict({ method, path, conflictingRouteId }, true))
  // A method no stored route has, while MAX_METHODS are stored, is one too many; `leaving` is a route that gives up
  // its method in the same change (an update), which frees the method when it was that method's only route.
  const tooManyMethods = (method: string, leaving?: Route.StoredRoute): TooManyMethods | undefined => {
    if (memory.byMethod.has(method)) return undefined
    const freed = leaving !== undefined && memory.byMethod.get(leaving.method)?.length === 1 ? 1 : 0
    return memory.byMethod.size - freed < Limits.MAX_METHODS
      ? undefined
      : new TooManyMethods({ method, limit: Limits.MAX_METHODS }, true)
  }
  // Left: refused, nothing decided (the method bound); right: the outcome, which a key remembers.
  const insert = (
    input: Route.CreateRoute,
    millis: number
  ): Either.Either<Either.Either<Route.StoredRoute, RouteConflict>, TooManyMethods> => {
    const key = conflictKey(input.method, input.path)
    const existing = memory.idByKey.get(key)
    if (existing !== undefined) {
      return Either.right(Either.left(
        new RouteConflict({ method: input.method, path: input.path, conflictingRouteId: existing }, true)
      ))
    }
    const refused = tooManyMethods(input.method)
    if (refused !== undefined) return Either.left(refused)
    // Built at once as stored (what `makeRoute` builds, with its revision): one class instance per create, no copy.
    const stored = new Route.StoredRoute({
      id: ids.next(millis),
      method: input.method,
      path: input.path,
      middleware: input.middleware,
      handler: input.handler,
      createdAt: new Date(millis),
      revision: ++memory.revision
    }, true)
    addRoute(memory, stored, key)
    return Either.right(Either.right(stored))
  }
  // The key's first answer again, or the refusal of a key used with another input.
  const again = (input: Route.CreateRoute, idempotency: Idempotency, kept: KeptKey) =>
    kept.fingerprint === fingerprint(input)
      ? Exit.succeed<Remembered>({ outcome: answerAgain(input, kept), replayed: true })
      : Exit.fail(new IdempotencyKeyReused({ key: idempotency.key }, true))
  return RouteRepository.of({
    // Decided at once from the clock: the HTTP core answers a create without a fiber (see `Now.withClock`).
    create: (input) =>
      Now.withClock((clock): Effect.Effect<Route.StoredRoute, RouteConflict | TooManyMethods> => {
        const decided = insert(input, clock.unsafeCurrentTimeMillis())
        if (Either.isLeft(decided)) return Exit.fail(decided.left)
        const outcome = decided.right
        return Either.isRight(outcome) ? Exit.succeed(outcome.right) : Exit.fail(outcome.left)
      }),
    // Read, decided and written without yielding: no other create with the key can start in between, so none is
    // ever in flight here, and the principal's bounds hold exactly.
    createIdempotent: (input, idempotency) =>
      Effect.clockWith((
        clock
      ): Effect.Effect<Remembered, IdempotencyKeyReused | TooManyIdempotencyKeys | TooManyMethods> => {
        const now = clock.unsafeCurrentTimeMillis()
        const { key, principal } = idempotency
        const kept = principals.get(principal)?.keys.get(key)
        if (kept !== undefined && kept.expiresAt > now) return again(input, idempotency, kept)
        forgetIdlePrincipals(principals, now)
        const held = principals.get(principal) ?? { keys: new Map(), bytes: 0, latestExpiry: 0 }
        forgetExpiredPrefix(held, now)
        const expired = held.keys.get(key)
        if (expired !== undefined) forgetKey(held, key, expired)
        const size = keySize(key)
        const refused = overLimit(held, idempotency, size, now)
        if (refused !== undefined) return Exit.fail(refused)
        const decided = insert(input, now)
        if (Either.isLeft(decided)) return Exit.fail(decided.left)
        const expiresAt = now + Duration.toMillis(idempotency.expiresAfter)
        held.keys.set(key, { fingerprint: fingerprint(input), ...firstAnswerOf(decided.right), expiresAt, size })
        held.bytes += size
        held.latestExpiry = Math.max(held.latestExpiry, expiresAt)
        // Stored again, so the principal moves to the end: the order of their last keys.
        principals.delete(principal)
        principals.set(principal, held)
        return Exit.succeed({ outcome: decided.right, replayed: false })
      }),
    unsafeFindById: (id) => memory.byId.get(id),
    findById: (id) =>
      Effect.suspend(() => {
        const route = memory.byId.get(id)
        return route === undefined ? notFound(id) : Effect.succeed(route)
      }),
    list: (query) => Effect.sync(() => listMemory(memory, query)),
    update: (id, patch, precondition) =>
      Effect.suspend((): Effect.Effect<
        Route.StoredRoute,
        RouteNotFound | PreconditionFailed | RouteConflict | TooManyMethods
      > => {
        const current = memory.byId.get(id)
        if (current === undefined) return notFound(id)
        if (!meetsPrecondition(precondition, current.revision)) return preconditionFailed(current)
        if (!patchChanges(current, patch)) return Effect.succeed(current)
        const method = patch.method ?? current.method
        const path = patch.path ?? current.path
        const holder = memory.idByKey.get(conflictKey(method, path))
        if (holder !== undefined && holder !== id) return conflict(method, path, holder)
        const refused = method === current.method ? undefined : tooManyMethods(method, current)
        if (refused !== undefined) return Exit.fail(refused)
        const updated = patched(current, patch, ++memory.revision)
        replaceRoute(memory, current, updated)
        return Effect.succeed(updated)
      }),
    remove: (id, precondition) =>
      Effect.suspend((): Effect.Effect<void, RouteNotFound | PreconditionFailed> => {
        const current = memory.byId.get(id)
        if (current === undefined) return notFound(id)
        if (!meetsPrecondition(precondition, current.revision)) return preconditionFailed(current)
        dropRoute(memory, current)
        // A delete is a change too: it takes a revision, which a change feed can carry.
        memory.revision++
        return Effect.void
      })
  })
})

/**
 * The in-memory store as a layer: the embedded default, and the store to swap in for tests.
 *
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<RouteRepository> = Layer.effect(RouteRepository, makeMemory)
