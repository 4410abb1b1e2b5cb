/**
 * A host process serving the routing API and the router over one runtime, so both share one store and one table
 * (docs/router.md), with the runtime's log lines captured for the tests to read.
 */
import { Cause, Context, Effect, Layer, Logger, ManagedRuntime } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import type { Services } from "./adapters.js"
import { ADMIN, type Store, tokens } from "./httpContract.js"

export interface LogLine {
  readonly level: string
  readonly message: string
  readonly cause: string
}

/** What the runtime logged, in order. */
export const captureLogs = () => {
  const lines: Array<LogLine> = []
  const logger = Logger.make(({ cause, logLevel, message }) => {
    lines.push({
      level: logLevel.label,
      message: (Array.isArray(message) ? message : [message]).map(String).join(" "),
      cause: Cause.isEmpty(cause) ? "" : Cause.pretty(cause)
    })
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

/** The shared services: the live table over `store` (and the store decorated by it) and the test tokens. */
export const hostRuntime = (store: Store) => {
  const logs = captureLogs()
  const runtime = ManagedRuntime.make(
    Layer.merge(RouteTable.layer.pipe(Layer.provide(store)), tokens).pipe(Layer.provide(logs.layer))
  )
  return { runtime, logs: logs.lines }
}

export const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }

/** A create request for the routing API. */
export const createRoute = (route: {
  readonly method: string
  readonly path: string
  readonly handler: string
  readonly middleware?: ReadonlyArray<string>
  readonly [field: string]: unknown
}) => ({ method: "POST", path: "/v1/routing", headers: admin, body: JSON.stringify(route) })

/**
 * `services` with a store whose first `list` (the table's load at start-up) sees no routes and which offers no change
 * feed; every later call goes to the store. A host with a router loads its table before it serves, so it does not start over a store that fails
 * (docs/scaling-out.md, "Readiness and staleness"); the failure rows of the routing API are what it answers when the store fails after start-up.
 */
export const failingAfterStart = (services: Services): Services =>
  Layer.map(services, (context) => {
    const store = Context.get(context, RouteRepository.RouteRepository)
    let loaded = false
    // Nor does the table follow the store's change feed: only the routing API's answers are under test.
    return Context.add(Context.omit(RouteRepository.Feed)(context), RouteRepository.RouteRepository, {
      ...store,
      list: (query) => {
        if (loaded) return store.list(query)
        loaded = true
        return Effect.succeed({ items: [], hasMore: false })
      }
    })
  })
