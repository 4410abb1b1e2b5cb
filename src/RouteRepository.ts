/**
 * The `RouteRepository` service: where routes are stored, and the embedded in-memory store.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Schema } from "effect"
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
 * Where routes live.
 *
 * @since 0.1.0
 */
export class RouteRepository extends Context.Tag("route-registry/RouteRepository")<RouteRepository, {
  /** Stores a new route with a fresh id and `createdAt`; fails if a route with the same method and shape exists. */
  readonly create: (input: Route.CreateRoute) => Effect.Effect<Route.Route, RouteConflict | StoreUnavailable>
  /** The route with that id; any string is accepted, and one that is not a route id is simply not found. */
  readonly findById: (id: string) => Effect.Effect<Route.Route, RouteNotFound | StoreUnavailable>
  /**
   * Offered by a store that keeps its routes in memory: the route with that id, read at once (`undefined` when
   * there is none). The HTTP core uses it to answer a lookup without starting a fiber; `findById` stays the way to
   * read in an Effect.
   */
  readonly unsafeFindById?: (id: string) => Route.Route | undefined
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
 * The route a store will keep for a create input: its id from `ids` stamped with `millis`, and `createdAt` the
 * same instant. Stores read `millis` from Effect's `Clock` (`Effect.clockWith`), so `TestClock` controls it.
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
 * The in-memory store: O(1) get and O(1) conflict check. Each create checks and inserts without yielding, so
 * exactly one of many concurrent same-shape creates wins.
 *
 * @since 0.1.0
 */
export const makeMemory: Effect.Effect<Context.Tag.Service<RouteRepository>> = Effect.map(RouteIdGenerator, (ids) => {
  const byId = new Map<string, Route.Route>()
  const idByKey = new Map<string, string>()
  return RouteRepository.of({
    create: (input) =>
      Effect.clockWith((clock) => {
        const key = conflictKey(input.method, input.path)
        const existing = idByKey.get(key)
        if (existing !== undefined) {
          return Effect.fail(
            new RouteConflict({ method: input.method, path: input.path, conflictingRouteId: existing }, true)
          )
        }
        const route = makeRoute(ids, input, clock.unsafeCurrentTimeMillis())
        idByKey.set(key, route.id)
        byId.set(route.id, route)
        return Effect.succeed(route)
      }),
    unsafeFindById: (id) => byId.get(id),
    findById: (id) =>
      Effect.suspend(() => {
        const route = byId.get(id)
        // Validation off: the fields are plain strings already.
        return route === undefined ? Effect.fail(new RouteNotFound({ id }, true)) : Effect.succeed(route)
      })
  })
})

/**
 * The in-memory store as a layer: the embedded default, and the store to swap in for tests.
 *
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<RouteRepository> = Layer.effect(RouteRepository, makeMemory)
