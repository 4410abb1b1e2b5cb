/**
 * The library's services for a benchmark entry: the memory store, or the Postgres store on the given pool (the
 * same pool configuration the Postgres peer gets), and the static tokens; and the seeding, through the store's own
 * `create`.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type { ManagedRuntime } from "effect"
import { Effect, Layer, Redacted } from "effect"
import type * as Http from "node:http"
import * as Authenticator from "route-registry/Authenticator"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as RouteRepository from "route-registry/RouteRepository"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import type { Options, Started } from "../peers/shared.js"
import { closeServer, seedInput } from "../peers/shared.js"

export type Services = RouteRepository.RouteRepository | Authenticator.Authenticator

export const layer = (options: Options): Layer.Layer<Services, unknown> => {
  const tokens = Authenticator.layerStaticTokens(
    options.tokens.map(({ id, scopes, token }) => ({
      token: Redacted.make(token),
      scopes,
      ...(id === undefined ? {} : { id })
    }))
  )
  const database = options.database
  const store: Layer.Layer<RouteRepository.RouteRepository, unknown> = database === undefined
    ? RouteRepository.layerMemory
    : PgRouteRepository.layer({ table: database.table }).pipe(
      Layer.provide(PgClient.layerFromPool({ acquire: Effect.succeed(database.pool) }))
    )
  return Layer.merge(store, tokens)
}

/** The request core's options out of a benchmark server's. */
export const routing = (options: Options): RoutingHandler.Options => ({
  maxBodyBytes: options.maxBodyBytes,
  bodyTimeoutMillis: options.bodyTimeoutMillis
})

/** Stores the seed routes one after another, as creates would; yields their ids. */
export const seed = (count: number) =>
  Effect.flatMap(RouteRepository.RouteRepository, (repository) =>
    Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => Effect.map(repository.create(seedInput(i)), (route) => route.id)
    )).pipe(Effect.orDie)

/**
 * A benchmark entry running on `runtime`: `serve` seeds, builds and starts the server; closing the entry closes the
 * server, then releases the runtime. If starting fails, the runtime is released.
 */
export const started = async <R>(
  runtime: ManagedRuntime.ManagedRuntime<R, unknown>,
  serve: () => Promise<{ readonly server: Http.Server; readonly port: number; readonly seeded: ReadonlyArray<string> }>
): Promise<Started> => {
  try {
    const { port, seeded, server } = await serve()
    return {
      port,
      seeded,
      close: async () => {
        await closeServer(server)
        await runtime.dispose()
      }
    }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}
