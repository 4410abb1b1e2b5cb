/**
 * What the benches of the Postgres store called directly share (bench/store.ts, bench/batch.ts): the store on a table
 * of its own, removed again when the scope closes, route inputs, and the median of rounds.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Context, Effect, Layer, Redacted } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"

export const DATABASE_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres"

export type Store = RouteRepository.RouteRepository["Type"]

/**
 * The compiled library's Postgres store on `table` (migrated here, uninstalled when the scope closes), with what it
 * offers beside it.
 */
export const pgContext = (table: string, maxConnections = 10) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      PgRouteRepository.layer({ table }).pipe(
        Layer.provideMerge(PgClient.layer({ url: Redacted.make(DATABASE_URL), maxConnections }))
      )
    )
    yield* Effect.addFinalizer(() => Effect.orDie(PgRouteRepository.uninstall({ table }).pipe(Effect.provide(context))))
    return context
  })

/** `pgContext`'s store alone. */
export const pgStore = (table: string, maxConnections = 10) =>
  Effect.map(pgContext(table, maxConnections), Context.get(RouteRepository.RouteRepository))

let counter = 0
/** A create input on a path no earlier one took, each time it runs (so it can be repeated). */
export const routeInput = (handler = "h") =>
  Effect.suspend(() =>
    Effect.orDie(Route.decodeCreate({ method: "GET", path: `/bench/${counter++}/:id`, handler, middleware: ["auth"] }))
  )

export const median = (values: ReadonlyArray<number>) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
