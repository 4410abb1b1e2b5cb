/**
 * The Postgres peer: the Fastify server of `fastify.ts` over a raw `pg.Pool`, with the library's SQL (an insert
 * that lets the unique index decide conflicts, then the conflicting id; a select by primary key). The table is
 * created by the library's own migration.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as When from "route-registry/When"
import * as Fastify from "./fastify.js"
import type { Database, Options, RouteRecord, Started } from "./shared.js"
import { INTERNAL_ERROR, newRecord, runMain, seedInput, STORE_UNAVAILABLE } from "./shared.js"

interface Row {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<string>
  readonly handler: string
  readonly created_at: Date
}

export const pgStore = ({ pool, table }: Database): Fastify.Store => {
  const insert = `INSERT INTO "${table}" (id, method, path, path_shape, middleware, handler, created_at, when_key)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (method, path_shape, when_key) DO NOTHING RETURNING id`
  const conflicting = `SELECT id FROM "${table}" WHERE method = $1 AND path_shape = $2 AND when_key = $3`
  const byId = `SELECT id, method, path, middleware, handler, created_at FROM "${table}" WHERE id = $1`
  return {
    create: async (input) => {
      const route = newRecord(input)
      const shape = Route.shapeOf(input.path)
      // The conditions' canonical JSON, as the library keeps them ("" for none): conflicts are judged on them too.
      const whenKey = When.canonicalJson(input.when)
      const inserted = await pool.query(insert, [
        route.id,
        route.method,
        route.path,
        shape,
        route.middleware,
        route.handler,
        route.createdAt,
        whenKey
      ])
      if (inserted.rowCount !== 0) return { created: route }
      const existing = await pool.query<{ id: string }>(conflicting, [route.method, shape, whenKey])
      return { conflictingRouteId: existing.rows[0]?.id ?? "unknown" }
    },
    // Only a route id can be stored; anything else is not looked up (the uuid column would refuse it).
    get: async (id): Promise<RouteRecord | undefined> => {
      if (!Route.isRouteId(id)) return undefined
      const row = (await pool.query<Row>(byId, [id])).rows[0]
      return row === undefined ? undefined : {
        id: row.id,
        method: row.method,
        path: row.path,
        // Names only: this create-and-get peer stores no middleware configs.
        middleware: row.middleware as ReadonlyArray<Route.MiddlewareEntry>,
        handler: row.handler,
        createdAt: row.created_at.toISOString()
      }
    }
  }
}

/** Applies the library's migration to `table`, through an Effect client on the same pool. */
export const migrate = ({ pool, table }: Database): Promise<void> =>
  Effect.runPromise(
    PgRouteRepository.migrate({ table }).pipe(Effect.provide(PgClient.layerFromPool({ acquire: Effect.succeed(pool) })))
  )

export const start = async (options: Options): Promise<Started> => {
  const database = options.database
  if (database === undefined) throw new Error("the Postgres peer needs a database (DATABASE_URL and TABLE)")
  await migrate(database)
  const store = pgStore(database)
  const seeded: Array<string> = []
  for (let i = 0; i < (options.seed ?? 0); i++) {
    const result = await store.create(seedInput(i))
    if (!("created" in result)) throw new Error(`seed route ${i} conflicts with ${result.conflictingRouteId}`)
    seeded.push(result.created.id)
  }
  return Fastify.serve(
    options,
    store,
    seeded,
    (error) => PgRouteRepository.isUnavailable(error) ? STORE_UNAVAILABLE : INTERNAL_ERROR
  )
}

runMain(import.meta.url, start)
