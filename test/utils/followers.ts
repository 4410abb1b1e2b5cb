/**
 * Followers for tests: `RouteFollower.layer` built in a runtime of its own, its services at hand, and the
 * comparison of two sets of routes path by path.
 */

import type { Scope } from "effect"
import { Chunk, Clock, Context, Effect, Layer, ManagedRuntime, Redacted, TestClock } from "effect"
import * as Authenticator from "route-registry/Authenticator"
import * as Route from "route-registry/Route"
import * as RouteFollower from "route-registry/RouteFollower"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import type * as ReplayRing from "../../src/internal/table/replayRing.js"
import { eventually } from "./waiting.js"

export interface Follower {
  readonly table: RouteTable.Table<Route.StoredRoute>
  readonly store: RouteRepository.RouteRepository["Type"]
  readonly status: () => RouteTable.Status
  readonly ring: ReplayRing.ReplayRing
  /** Its services, and the authenticator when one was given. */
  readonly runtime: ManagedRuntime.ManagedRuntime<
    | RouteTable.RouteTable
    | RouteRepository.RouteRepository
    | RouteTable.TableStatus
    | RouteTable.ReplayRing
    | Authenticator.Authenticator,
    unknown
  >
  readonly close: () => Promise<void>
}

/**
 * A follower of the registry at `url`, built (so its first `ready` has arrived), with `authenticator` beside it for a
 * host serving its routing API (by default one that accepts no token).
 */
export const follow = async (
  url: string,
  token: string,
  options: Partial<RouteFollower.Options> = {},
  authenticator: Layer.Layer<Authenticator.Authenticator, unknown> = Authenticator.layerStaticTokens([])
): Promise<Follower> => {
  const followed = RouteFollower.layer({
    url,
    token: Redacted.make(token),
    retryInitial: 10,
    retryMax: 200,
    ...options
  })
  const runtime = ManagedRuntime.make(Layer.merge(followed, authenticator))
  const { context } = await runtime.runtime().catch(async (error: unknown) => {
    await runtime.dispose()
    throw error
  })
  return {
    table: Context.get(context, RouteTable.RouteTable),
    store: Context.get(context, RouteRepository.RouteRepository),
    status: Context.get(context, RouteTable.TableStatus).unsafeGet,
    ring: Context.get(context, RouteTable.ReplayRing),
    runtime,
    close: () => runtime.dispose()
  }
}

/** method + path → the route's JSON: what two tables must agree on. */
export const byPath = (routes: Iterable<Route.Route>): Map<string, string> => {
  const map = new Map<string, string>()
  for (const route of routes) map.set(`${route.method} ${route.path}`, Route.toJson(route))
  return map
}

/** The keys on which two tables differ (missing on either side, or another route). */
export const differences = (expected: Iterable<Route.Route>, actual: Iterable<Route.Route>): Array<string> => {
  const a = byPath(expected)
  const b = byPath(actual)
  const keys = new Set([...a.keys(), ...b.keys()])
  return [...keys].filter((key) => a.get(key) !== b.get(key))
}

let clock = Date.UTC(2026, 11, 1)

/** A stored route, with a new id. */
export const route = (method: string, path: string, handler = "h", middleware: Array<string> = []) => {
  const millis = clock++
  return new Route.StoredRoute({
    id: Route.makeRouteId(millis),
    method: method as Route.HttpMethod,
    path: path as Route.RoutePath,
    middleware: middleware as Array<Route.MiddlewareName>,
    handler: handler as Route.HandlerName,
    createdAt: new Date(millis),
    revision: 1
  })
}

/** `route` with some fields changed and a new revision. */
export const changed = (
  route: Route.StoredRoute,
  fields: Partial<Pick<Route.Route, "method" | "path" | "handler" | "middleware">>
) => new Route.StoredRoute({ ...route, ...fields, revision: route.revision + 1 })

// --- under TestClock: the follower's waits (backoff, startTimeout, staleness) run on the test's clock ---------------

/** A follower built in the calling (TestClock) context: its timers wait for `TestClock.adjust`, its sockets are real. */
export const followUnderTestClock = (
  url: string,
  token: string,
  options: Partial<RouteFollower.Options> = {}
): Effect.Effect<Pick<Follower, "table" | "status">, unknown, Scope.Scope> =>
  Effect.map(
    Layer.build(RouteFollower.layer({ url, token: Redacted.make(token), retryInitial: 10, retryMax: 200, ...options })),
    (context) => ({
      table: Context.get(context, RouteTable.RouteTable),
      status: Context.get(context, RouteTable.TableStatus).unsafeGet
    })
  )

/** The waits of fibers on the TestClock (pending `sleep`s), in ms from now, soonest first. */
export const pendingWaits: Effect.Effect<Array<number>> = Effect.gen(function*() {
  const now = yield* Clock.currentTimeMillis
  return Chunk.toReadonlyArray(yield* TestClock.sleeps()).map((wake) => wake - now).sort((a, b) => a - b)
})

/**
 * Ends the wait a fiber is in, once one is in a wait of at most `within` ms (waiting in real time for it to begin),
 * by setting the TestClock to its end; gives its length. (A sleep that was interrupted stays in the TestClock's list,
 * so waits known to be longer are left out.)
 */
export const endWait = (within: number): Effect.Effect<number> =>
  Effect.gen(function*() {
    let wake: number | undefined
    const now = yield* Clock.currentTimeMillis
    yield* eventually(
      () => `nothing waits on the clock for at most ${within} ms`,
      Effect.map(TestClock.sleeps(), (sleeps) =>
        (wake = Chunk.toReadonlyArray(sleeps).filter((end) =>
          end - now <= within
        ).sort((a, b) => a - b)[0]) !==
          undefined)
    )
    yield* TestClock.setTime(wake!)
    return wake! - now
  })
