/**
 * The `RouteRepository` service: where routes are stored, what every store promises, and the embedded in-memory store.
 *
 * @since 0.1.0
 */
import type { Duration, Either } from "effect"
import { Context, Effect, Layer } from "effect"
import * as Capabilities from "./internal/store/capabilities.js"
import * as Memory from "./internal/store/memory.js"
import * as Route from "./Route.js"

import type {
  OutsidePrefixes,
  PreconditionFailed,
  ReadOnlyStore,
  RouteConflict,
  RouteNotFound,
  StoreUnavailable,
  TooManyMethods
} from "./internal/store/errors.js"

// The contract's errors and shared rules are defined in internal/store/, so that a store imports them without
// importing this module, which builds the memory store: no import runs in a circle.
export * from "./internal/store/errors.js"

export { Actor } from "./internal/store/actor.js"

export {
  Batches,
  ChangeLog,
  Feed,
  Idempotent,
  MemoryRead,
  ReadOnly,
  Restorable
} from "./internal/store/capabilities.js"
export type { Capability } from "./internal/store/capabilities.js"

export type { BatchApplied, BatchOperation, BatchOptions, BatchOutcome } from "./internal/store/batch.js"
export { MAX_BATCH_OPERATIONS } from "./internal/store/batch.js"

export type { ChangeFeed, ChangeListener, Changes } from "./internal/store/changeFeed.js"

export {
  answerAgain,
  conflictKey,
  DEFAULT_MEMORY_HISTORY_CAPACITY,
  fingerprint,
  firstAnswerOf,
  keySize,
  makeRoute,
  MAX_METHODS,
  meetsPrecondition,
  patchChanges,
  underPrefixes,
  withinPrefixes
} from "./internal/store/rules.js"

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
 * A condition on the route as it is stored, checked atomically with the change it guards. `ifMatch` lists the
 * revisions the caller accepts (none matching fails with `PreconditionFailed`); absent, any revision will do.
 * `pathPrefixes` limits the change to routes whose stored path is one of them or starts with one followed by `/`
 * (none fails with `OutsidePrefixes`, checked before `ifMatch`); absent, any path will do. This is how a writer that
 * owns only some path prefixes (`routes:write:/payments`) updates and deletes without a check-then-write race.
 *
 * @since 0.2.0
 */
export interface Precondition {
  readonly ifMatch?: ReadonlyArray<number> | undefined
  /** @since 0.4.0 */
  readonly pathPrefixes?: ReadonlyArray<string> | undefined
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
  /**
   * Only routes whose path, handler or one of whose middleware names contains this text, compared byte for byte
   * (1–256 characters through the HTTP API).
   */
  readonly q?: string | undefined
  /** (0.5.0) Only enabled routes (`true`) or only disabled ones (`false`). */
  readonly enabled?: boolean | undefined
  /** (0.5.0) Only routes carrying this tag. */
  readonly tag?: string | undefined
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
 * How a change is made: who makes it, and whether it is only tried. A dry run checks everything the change would
 * (not found, precondition, conflict, the method bound) and answers as the change would, but stores nothing, uses no
 * revision, writes no log entry and announces nothing.
 *
 * @since 0.4.0
 */
export interface WriteOptions {
  /** The actor the log records; absent, the store reads `Actor` from the context. */
  readonly actor?: string | null | undefined
  readonly dryRun?: boolean | undefined
}

/**
 * What a change of a stored route (`update`, `remove`, `restore`) can fail with, in the order it is decided: not
 * found, outside the path prefixes, the precondition, a conflict, the method bound; and the store's own failures.
 * `restore` adds `InvalidRestore`, and `remove` meets no conflict and no method bound.
 *
 * @since 0.4.0
 */
export type WriteError =
  | RouteNotFound
  | OutsidePrefixes
  | PreconditionFailed
  | RouteConflict
  | TooManyMethods
  | StoreUnavailable
  | ReadOnlyStore

/**
 * What a change did: `restore` is a change that made a route what it was right after an earlier revision.
 *
 * @since 0.4.0
 */
export type Action = "create" | "update" | "delete" | "restore"

/**
 * One entry of the change log: the change at `revision`, when it took effect, who made it, and the route before and
 * after it (`null` before a create and after a delete).
 *
 * @since 0.4.0
 */
export interface HistoryEntry {
  readonly revision: number
  readonly at: Date
  readonly actor: string | null
  readonly action: Action
  readonly routeId: string
  readonly before: Route.Route | null
  readonly after: Route.Route | null
  /** The revision a `restore` went back to. */
  readonly restoredFrom?: number | undefined
  /**
   * (0.5.0) The id of the batch (`applyBatch`) the change was part of; its entries have consecutive revisions.
   *
   * @since 0.5.0
   */
  readonly batch?: string | undefined
  /**
   * (0.5.0) With `batch`: the revision of the batch's last change, so that a reader of the log knows when it holds the
   * whole batch (the change stream sends a batch as one event). Not part of the API's entries.
   *
   * @since 0.5.0
   */
  readonly batchEnd?: number | undefined
  /**
   * (0.5.0) With `batch`: the batch's `description`, when it was given one.
   *
   * @since 0.5.0
   */
  readonly batchDescription?: string | undefined
}

/**
 * One page of the log, newest first, the filters combined with AND.
 *
 * @since 0.4.0
 */
export interface HistoryQuery {
  /** How many entries at most, 1–200. */
  readonly limit: number
  /** Only entries older than this revision (the last revision of the previous page). */
  readonly before?: number | undefined
  readonly routeId?: string | undefined
  readonly actor?: string | undefined
  readonly action?: Action | undefined
  /** (0.5.0) Only the entries of this batch. */
  readonly batch?: string | undefined
}

/**
 * @since 0.4.0
 */
export interface HistoryPage {
  readonly items: ReadonlyArray<HistoryEntry>
  /** `true` exactly when an older entry matching the filters follows the last item. */
  readonly hasMore: boolean
}

/**
 * What a store's change log holds after a revision (`logAfter`): what a process reads to serve its change stream in
 * revision order, and to resume a follower from a cursor of any process on the same store, before or after restarts.
 *
 * @since 0.5.0
 */
export interface LogRead {
  /**
   * The store's identity: the same for every process on one store (an id kept in the Postgres database; drawn per
   * memory store instance), another for another store.
   */
  readonly store: string
  /** The store's newest revision when the log was read: every entry up to it is in the log (or was pruned). */
  readonly revision: number
  /** The entries after the revision asked for, oldest first, at most the limit asked for. */
  readonly entries: ReadonlyArray<HistoryEntry>
  /** `false` when the log no longer holds every change after the revision asked for (pruned past its retention). */
  readonly complete: boolean
}

/**
 * What a restore did: updated the route (`created: false`), or, when it had been deleted, created it again as a new
 * route with an id and `createdAt` of its own (`created: true`).
 *
 * @since 0.4.0
 */
export interface Restored {
  readonly route: Route.StoredRoute
  readonly created: boolean
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
    input: Route.CreateRoute,
    options?: WriteOptions
  ) => Effect.Effect<Route.StoredRoute, RouteConflict | TooManyMethods | StoreUnavailable | ReadOnlyStore>
  /** The route with that id; any string is accepted, and one that is not a route id is simply not found. */
  readonly findById: (id: string) => Effect.Effect<Route.StoredRoute, RouteNotFound | StoreUnavailable>
  /** One page of routes in ascending id order (keyset pagination: one indexed range read). */
  readonly list: (query: ListQuery) => Effect.Effect<Page, StoreUnavailable>
  /**
   * Replaces the fields `patch` gives, keeping `id` and `createdAt`. A patch that changes nothing leaves the route
   * and its revision as they are. Decided in this order: not found, the path prefixes, `ifMatch`, conflict, then the method bound (a
   * new method past `MAX_METHODS` distinct ones; a conflict names a stored method, so the two never meet).
   */
  readonly update: (
    id: string,
    patch: Route.RoutePatch,
    precondition?: Precondition,
    options?: WriteOptions
  ) => Effect.Effect<Route.StoredRoute, WriteError>
  /**
   * Removes the route; its method and shape are free again at once. Not found first, then the precondition. Gives the
   * revision of the removal.
   */
  readonly remove: (
    id: string,
    precondition?: Precondition,
    options?: WriteOptions
  ) => Effect.Effect<number, RouteNotFound | OutsidePrefixes | PreconditionFailed | StoreUnavailable | ReadOnlyStore>
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
 * The in-memory store: O(1) get and conflict check; a page is a binary search to the cursor, then a walk along the
 * shortest of the sorted id lists its filters select (all ids, or those of one method, handler or middleware name).
 * Every change decides its checks and writes without yielding, so of concurrent conflicting changes exactly one wins.
 * The store alone: what it offers beside it comes with `makeMemoryContext` and the layers.
 *
 * @since 0.1.0
 */
export const makeMemory: Effect.Effect<Context.Tag.Service<RouteRepository>> = Effect.map(
  RouteIdGenerator,
  (ids) => Memory.make(ids).repository
)

/**
 * The memory store's options.
 *
 * @since 0.4.0
 */
export interface MemoryOptions {
  /** The newest log entries kept at least (default `DEFAULT_MEMORY_HISTORY_CAPACITY`, 10,000). */
  readonly historyCapacity?: number | undefined
}

/**
 * `makeMemory` with options.
 *
 * @since 0.4.0
 */
export const makeMemoryWith = (options: MemoryOptions): Effect.Effect<Context.Tag.Service<RouteRepository>> =>
  Effect.map(RouteIdGenerator, (ids) => Memory.make(ids, options).repository)

/**
 * The memory store with what it offers beside it (`MemoryRead`, `Idempotent`, `ChangeLog`, `Restorable`,
 * `Batches`), as its layers provide them: for a host that builds the routing API over explicit services
 * (`RoutingHandler.makeWith`) and wants what the layer gives.
 *
 * @since 0.5.0
 */
export const makeMemoryContext = (
  options: MemoryOptions = {}
): Effect.Effect<Context.Context<RouteRepository | MemoryCapability>> =>
  Effect.map(RouteIdGenerator, (ids) => {
    const { repository, ...offered } = Memory.make(ids, options)
    return Capabilities.withCapabilities(Context.make(RouteRepository, repository), {
      ...Capabilities.NONE,
      ...offered
    }) as Context.Context<RouteRepository | MemoryCapability>
  })

/**
 * What the memory store offers beside it.
 *
 * @since 0.5.0
 */
export type MemoryCapability =
  | Capabilities.MemoryRead
  | Capabilities.Idempotent
  | Capabilities.ChangeLog
  | Capabilities.Restorable
  | Capabilities.Batches

/**
 * `layerMemory` with options.
 *
 * @since 0.4.0
 */
export const layerMemoryWith = (options: MemoryOptions): Layer.Layer<RouteRepository | MemoryCapability> =>
  Layer.effectContext(makeMemoryContext(options))

/**
 * The in-memory store as a layer: the embedded default, and the store to swap in for tests.
 *
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<RouteRepository | MemoryCapability> = Layer.effectContext(makeMemoryContext())
