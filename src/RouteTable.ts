/**
 * The route table: the stored routes in memory, changed in place one route at a time, resolving a
 * request (method, request target) to the route that serves it and its parameters, to the methods the path would be
 * served with (405), to nothing (404) or to a malformed path (400).
 *
 * A lookup is a plain synchronous function: it never reads a store, never builds an `Effect`, never starts a fiber.
 * It examines each node of the table at most once, and skips a subtree shaped like one that already failed, so a
 * miss costs a few times a hit even on tables built to force backtracking (paths have at most 64 segments).
 * Inserting or removing a route costs the length of its path, whatever the size of the table.
 *
 * @example
 * ```ts
 * import * as RouteTable from "route-registry/RouteTable"
 *
 * const table = RouteTable.fromIterable(routes)
 * const resolution = RouteTable.lookup(table, "GET", "/users/42?fields=name")
 * if (resolution._tag === "Found") console.log(resolution.route.handler, resolution.params.id)
 * RouteTable.insert(table, created) // or an updated route: it replaces the route with its id
 * RouteTable.remove(table, deleted.id)
 * ```
 *
 * @since 0.2.0
 */
import { Effect, Either, Layer } from "effect"
import { dual } from "effect/Function"
import type { Inspectable } from "effect/Inspectable"
import type { Pipeable } from "effect/Pipeable"
import type * as When from "./internal/route/when.js"
import * as Explain from "./internal/table/explain.js"
import * as Ring from "./internal/table/replayRing.js"
import type { CapacityOptions as LayerOptions } from "./internal/table/replayRing.js"
import * as Tree from "./internal/table/routeTree.js"
import { contextOf, ReplayRing, RouteTable, TableStatus } from "./internal/table/services.js"
import type * as LiveStatus from "./internal/table/status.js"
import * as Start from "./internal/table/storeStart.js"
import * as Impl from "./internal/table/table.js"
import { InvalidOption } from "./InvalidOption.js"
import type * as Route from "./Route.js"
import * as RouteRepository from "./RouteRepository.js"

/**
 * @since 0.2.0
 * @category symbol
 */
export type TypeId = typeof Impl.TypeId

/**
 * A live table of routes. It is mutable: `insert` and `remove` change it in place, and the next lookup sees the
 * change. Iterating it gives its routes, in no particular order.
 *
 * A route is known by its id: inserting a route whose id is in the table replaces that route (an update). Two routes
 * of one method never share a shape (the stores refuse it); should it happen anyway, the table keeps both and the
 * one inserted last serves, until it is removed and the other serves again. The table never ends in a state that
 * depends on the order of the changes, only on the routes it holds.
 *
 * @since 0.2.0
 * @category models
 */
export interface Table<in out R extends Route.Route = Route.Route> extends Iterable<R>, Pipeable, Inspectable {
  readonly [Impl.TypeId]: TypeId
  /** @internal */
  readonly tree: Tree.Tree<R>
}

/**
 * The route that serves the request, with its parameters: name → value, percent-decoded as UTF-8.
 *
 * @since 0.2.0
 * @category models
 */
export type Found<R extends Route.Route = Route.Route> = Tree.Found<R>

/**
 * No route of the request's method serves its path, but routes of these methods do: sorted in byte order, with
 * `HEAD` wherever `GET` is (the value of an `Allow` header).
 *
 * @since 0.2.0
 * @category models
 */
export type MethodNotAllowed = Tree.MethodNotAllowed

/**
 * No route serves the request's path, whatever the method.
 *
 * @since 0.2.0
 * @category models
 */
export type NotFound = Tree.NotFound

/**
 * The request's path is malformed: a `%` not followed by two hex digits, or a parameter value that is not UTF-8
 * once percent-decoded. `reason` says which, as a phrase (`"%" at index 7 is not followed by two hex digits`).
 *
 * @since 0.2.0
 * @category models
 */
export type BadPath = Tree.BadPath

/**
 * What a lookup resolves a request to.
 *
 * @since 0.2.0
 * @category models
 */
export type Resolution<R extends Route.Route = Route.Route> = Tree.Resolution<R>

/**
 * A table over `tree`, which its owner changes (a follower's table).
 *
 * @internal
 */
export const fromTree = <R extends Route.Route>(tree: Tree.Tree<R>): Table<R> => new Impl.TableImpl(tree)

/**
 * `true` for a route table.
 *
 * @since 0.2.0
 * @category guards
 */
export const isTable = (u: unknown): u is Table<Route.Route> => typeof u === "object" && u !== null && Impl.TypeId in u

/**
 * A new table without routes.
 *
 * @since 0.2.0
 * @category constructors
 */
export const empty = <R extends Route.Route = Route.Route>(): Table<R> => new Impl.TableImpl<R>()

/**
 * A new table holding `routes` (a later route replaces an earlier one with the same id).
 *
 * @since 0.2.0
 * @category constructors
 */
export const fromIterable = <R extends Route.Route>(routes: Iterable<R>): Table<R> => {
  const table = new Impl.TableImpl<R>()
  for (const route of routes) Tree.insert(table.tree, route)
  return table
}

/**
 * Adds a route to the table in place, replacing the route with the same id if the table has one (so an update is
 * an `insert` of the new version). Throws a `TypeError` when the route's path is not a valid pattern, which a route
 * decoded by the `Route` schema never has; the table is then unchanged.
 *
 * @since 0.2.0
 * @category mutations
 */
export const insert: {
  <R extends Route.Route>(route: NoInfer<R>): (self: Table<R>) => Table<R>
  <R extends Route.Route>(self: Table<R>, route: NoInfer<R>): Table<R>
} = dual(2, <R extends Route.Route>(self: Table<R>, route: R): Table<R> => {
  Tree.insert(self.tree, route)
  return self
})

/**
 * Removes the route with this id from the table in place; nothing happens when the table has none.
 *
 * @since 0.2.0
 * @category mutations
 */
export const remove: {
  (id: string): <R extends Route.Route>(self: Table<R>) => Table<R>
  <R extends Route.Route>(self: Table<R>, id: string): Table<R>
} = dual(2, <R extends Route.Route>(self: Table<R>, id: string): Table<R> => {
  Tree.remove(self.tree, id)
  return self
})

/**
 * The route with this id, or `undefined`.
 *
 * @since 0.2.0
 * @category getters
 */
export const get: {
  (id: string): <R extends Route.Route>(self: Table<R>) => R | undefined
  <R extends Route.Route>(self: Table<R>, id: string): R | undefined
} = dual(2, <R extends Route.Route>(self: Table<R>, id: string): R | undefined => Tree.get(self.tree, id))

/**
 * The number of routes in the table.
 *
 * @since 0.2.0
 * @category getters
 */
export const size = <R extends Route.Route>(self: Table<R>): number => self.tree.byId.size

/**
 * Resolves a request by its method and request target (`req.url`: origin form `/a/b?q`, or absolute form
 * `http://host/a/b?q`):
 * - the path is the target up to its first `?`, normalised as RFC 3986 §6.2.2 says and no further (hex digits of
 *   escapes in uppercase, escapes of letters, digits and `- . _ ~` decoded; no dot segments removed, no case
 *   folded, no `//` merged, no trailing slash stripped); a `%` not followed by two hex digits is a `BadPath`;
 * - segments are compared one by one and, without a wildcard, their numbers must be equal; a static segment matches
 *   the same bytes, a parameter any non-empty segment, a wildcard one or more remaining segments, each non-empty;
 *   `/` matches only `/`;
 * - a mixed segment (`:file.:ext`) matches a segment that splits as it says, its parameters taken left to right,
 *   each the shortest non-empty text after which the rest still matches (`archive.tar.gz`: `archive`, `tar.gz`);
 * - methods compare exactly, and a `HEAD` request is served by a `HEAD` route for its path, else by the `GET` route;
 * - of the routes that match, the most specific serves: at the first segment where two patterns differ, static beats
 *   mixed beats parameter beats wildcard; of two mixed segments, the one with more static characters, then the
 *   shape first in byte order;
 * - (0.5.0) a route with conditions serves only a request that meets them all (its host, headers and the target's
 *   query, read from `headers`); among routes of one shape, the precedence of docs/router.md (conditions) decides;
 * - parameter values are percent-decoded as UTF-8 (a wildcard's: each segment, joined with `/`); one that is not
 *   UTF-8 is a `BadPath`.
 *
 * A target of another form (`*`, `host:port`) has no path: `NotFound`.
 *
 * @since 0.2.0
 * @category lookups
 */
export const lookup: {
  (method: string, target: string, headers?: Headers): <R extends Route.Route>(self: Table<R>) => Resolution<R>
  <R extends Route.Route>(self: Table<R>, method: string, target: string, headers?: Headers): Resolution<R>
} = dual(
  (args) => typeof args[0] !== "string",
  <R extends Route.Route>(self: Table<R>, method: string, target: string, headers?: Headers): Resolution<R> =>
    Tree.lookup(self.tree, method, target, headers)
)

/**
 * A request's headers as `lookup` and `explain` read them for routes with conditions (docs/router.md: conditions):
 * Node's `req.headers` or Effect's `Headers` (a record by lowercase name), or the Fetch API's `Headers`. The host is
 * the `Host` header (or `:authority`); the query is the target's.
 *
 * @since 0.5.0
 * @category models
 */
export type Headers = When.HeaderSource

/**
 * A route whose pattern matches a request's path but does not serve the request, and why, as a sentence: another
 * method, or the segment and the rule of precedence by which the route that serves beats it.
 *
 * @since 0.4.0
 * @category models
 */
export type Candidate<R extends Route.Route = Route.Route> = Explain.Candidate<R>

/**
 * How a table resolves a request, explained: `resolution` is what `lookup` answers; `allow` the methods routes serve
 * the path with (sorted, `HEAD` wherever `GET` is; the `Allow` of a 405; empty for a malformed path or when nothing
 * matches); `candidates` every other route whose pattern matches the path, the most specific first, each with why
 * it does not serve.
 *
 * @since 0.4.0
 * @category models
 */
export type Explanation<R extends Route.Route = Route.Route> = Explain.Explanation<R>

/**
 * Explains how the table resolves a request: what `lookup` answers, and every other route whose pattern matches the
 * path with why it does not serve the request. It walks every branch of the table that matches the path, where
 * `lookup` stops at the first route of the method, so it costs up to the size of the table: it answers questions
 * (`GET /v1/routing/match`, `route-registry match`) and is never used to route.
 *
 * @example
 * ```ts
 * import * as RouteTable from "route-registry/RouteTable"
 *
 * const { resolution, candidates } = RouteTable.explain(table, "GET", "/users/me")
 * for (const { route, reason } of candidates) console.log(route.method, route.path, reason)
 * ```
 *
 * @since 0.4.0
 * @category lookups
 */
export const explain: {
  (method: string, target: string, headers?: Headers): <R extends Route.Route>(self: Table<R>) => Explanation<R>
  <R extends Route.Route>(self: Table<R>, method: string, target: string, headers?: Headers): Explanation<R>
} = dual(
  (args) => typeof args[0] !== "string",
  <R extends Route.Route>(self: Table<R>, method: string, target: string, headers?: Headers): Explanation<R> =>
    Explain.explain(self.tree, method, target, headers)
)

export { ReplayRing, RouteTable, TableStatus }

/**
 * @since 0.4.0
 * @category tags
 * @deprecated since 0.5.0, removed in 0.6.0: use `ReplayRing` (the same tag; "history" names the stored change log)
 */
export const ChangeHistory = ReplayRing

/**
 * @since 0.4.0
 * @category tags
 * @deprecated since 0.5.0, removed in 0.6.0: use `ReplayRing`
 */
export type ChangeHistory = ReplayRing

/**
 * How current the process's table is, for a readiness check: what it follows, where its routes came from, whether
 * its last read succeeded, and when it was last confirmed current; each field documented on it. docs/resilience.md.
 *
 * @since 0.2.0
 * @category models
 */
export type Status = LiveStatus.Status

/**
 * The status of the process's table, now.
 *
 * @since 0.2.0
 * @category accessors
 */
export const status: Effect.Effect<Status, never, TableStatus> = Effect.flatMap(TableStatus, (service) => service.get)

export type { LayerOptions }

/**
 * The number of changes `layer` keeps for the change stream: 10,000.
 *
 * @since 0.5.0
 */
export const DEFAULT_REPLAY_CAPACITY: number = Ring.DEFAULT_CAPACITY

/**
 * @since 0.4.0
 * @deprecated since 0.5.0, removed in 0.6.0: use `DEFAULT_REPLAY_CAPACITY`
 */
export const DEFAULT_HISTORY_CAPACITY: number = DEFAULT_REPLAY_CAPACITY

const live = (capacity: number) => Effect.map(Start.plain(capacity), contextOf)

/**
 * The live table over the `RouteRepository` in context. Building the layer loads every stored route (a process
 * routes only once its table is loaded); it then provides the table and the same store, through which every change
 * is in the table before it is acknowledged, so a route created through the API serves at once and stops when it is
 * deleted. Provide the routing API the store from this layer, not the one underneath, so both share the table.
 *
 * When the store is shared with other processes (the Postgres store), the layer also follows their changes for as
 * long as it lives: each is in the table within milliseconds of its commit (or within the store's poll interval
 * without notifications), none is lost or applied out of order, and `TableStatus` says how current the table is.
 * With `Telemetry.layer` in context, it also keeps the table's gauges and records the lag of what it follows.
 *
 * It also provides `ReplayRing`, the table's last `DEFAULT_REPLAY_CAPACITY` changes, from which the routing API
 * serves its change stream (`GET /v1/routing/changes`); `layerWith` sets how many are kept.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<
  RouteTable | RouteRepository.RouteRepository | TableStatus | ReplayRing,
  RouteRepository.StoreUnavailable,
  RouteRepository.RouteRepository
> = Layer.scopedContext(live(Ring.DEFAULT_CAPACITY))

/**
 * `layer` with options; fails with `InvalidOption` naming `replayCapacity` when it is not a whole number from 1 (or
 * `historyCapacity`, its deprecated name, when that is the one given, or both are given and differ).
 *
 * @example
 * ```ts
 * import * as RouteTable from "route-registry/RouteTable"
 *
 * // Followers up to 100,000 changes behind resume instead of loading the whole table again.
 * const table = RouteTable.layerWith({ replayCapacity: 100_000 })
 * ```
 *
 * @since 0.4.0
 * @category layers
 */
export const layerWith = (options: LayerOptions): Layer.Layer<
  RouteTable | RouteRepository.RouteRepository | TableStatus | ReplayRing,
  RouteRepository.StoreUnavailable | InvalidOption,
  RouteRepository.RouteRepository
> =>
  Either.match(Ring.capacityOf(options), {
    onLeft: Layer.fail,
    onRight: (capacity) => Layer.scopedContext(live(capacity))
  })

/**
 * The options of `layerFrom`: `replayCapacity` (and its deprecated name `historyCapacity`) as `layerWith`'s;
 * `snapshotFile`, `bootstrapFile`, `startTimeout` (default 10 seconds) as docs/resilience.md says.
 *
 * @since 0.5.0
 * @category models
 */
export type StartOptions = Start.StartOptions

/**
 * `layerWith` over the store `storeLayer` builds, which may be down at start, keeping `snapshotFile` current. When
 * the store's first try fails, or it is not built within `startTimeout`, the table routes at once from a valid snapshot (else `bootstrapFile`),
 * `TableStatus` says `source: "snapshot"` and its age, the store's every call fails with `StoreUnavailable` (writes
 * answer `503 store_unavailable`), and a fiber keeps building the store; then the snapshot's table catches up through
 * the store's change log from its revision, its streams hearing the changes as changes (a bootstrap file's, or a
 * snapshot the log no longer reaches back to, is replaced in one step), and `source` is `"database"`. With neither
 * file usable, it waits and fails as `layerWith`. docs/resilience.md.
 *
 * @since 0.5.0
 * @category layers
 */
export const layerFrom = <E, R>(
  storeLayer: Layer.Layer<RouteRepository.RouteRepository, E, R>,
  options: StartOptions
): Layer.Layer<
  RouteTable | RouteRepository.RouteRepository | TableStatus | ReplayRing,
  E | RouteRepository.StoreUnavailable | InvalidOption,
  R
> =>
  Either.match(Ring.capacityOf(options), {
    onLeft: Layer.fail,
    onRight: (capacity) => Layer.scopedContext(Effect.map(Start.fromFiles(storeLayer, capacity, options), contextOf))
  })
