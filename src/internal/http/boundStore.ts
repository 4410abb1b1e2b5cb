/**
 * The store the routing API is bound to, with what it offers beside it (`RouteRepository`'s capabilities): read from
 * the context (`RoutingHandler.make`), or from what a host gives (`RoutingHandler.makeWith`: a store alone, or a
 * context holding it and its capabilities, as `PgRouteRepository.makeContext` and `RouteRepository.makeMemoryContext`
 * give them), and as telemetry sees it.
 *
 * @internal
 */
import { Context, Effect, Runtime } from "effect"
import * as RouteRepository from "../../RouteRepository.js"
import * as Capabilities from "../store/capabilities.js"
import * as StoreTelemetry from "../store/telemetry.js"
import type * as ChangeStream from "./changeStream.js"
import * as LogPages from "./logPages.js"

type Repository = Context.Tag.Service<RouteRepository.RouteRepository>

/** The store and what it offers beyond the contract, as the core takes them. */
export interface BoundStore {
  readonly repository: Repository
  readonly offered: Capabilities.Capabilities
}

/** The store in context and the capabilities provided beside it. */
export const inContext: Effect.Effect<BoundStore, never, RouteRepository.RouteRepository> = Effect.zipWith(
  RouteRepository.RouteRepository,
  Capabilities.capabilities,
  (repository, offered) => ({ repository, offered })
)

/** What a host gives `makeWith`: a store alone offers nothing beyond the contract. */
export const given = (store: Repository | Context.Context<RouteRepository.RouteRepository>): BoundStore =>
  Context.isContext(store)
    ? {
      repository: Context.get(
        store as Context.Context<RouteRepository.RouteRepository>,
        RouteRepository.RouteRepository
      ),
      offered: Capabilities.capabilitiesOf(store)
    }
    : { repository: store, offered: Capabilities.NONE }

/** The store as telemetry sees it: a span and a duration per operation it measures. */
export const instrumented = ({ offered, repository }: BoundStore): BoundStore => ({
  repository: StoreTelemetry.instrumentStore(repository),
  offered: StoreTelemetry.instrumentCapabilities(offered)
})

/** The store's log, read for a change stream (which runs outside any fiber), when the store keeps one. */
export const readLog = (
  runtime: Runtime.Runtime<never>,
  changeLog: Context.Tag.Service<RouteRepository.ChangeLog> | undefined
): ChangeStream.ReadLog | undefined =>
  changeLog && LogPages.shared((revision, limit) => Runtime.runPromise(runtime, changeLog.logAfter(revision, limit)))
