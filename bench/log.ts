/**
 * The change log on the Postgres store (docs/history.md): `npm run bench:log [-- --entries N] [--reads R]`.
 *
 * The compiled library in dist/ (run `npm run build` first), a pool of 10 connections on the database in DATABASE_URL
 * (default: the local one), tables of their own. It measures, in one process:
 * - bytes per log entry: the log table with its indexes after N entries (2,000 of them updates, the rest creates);
 * - a page of `GET /v1/routing/history` (the store's `history`, 50 entries, newest first, and with a filter on a
 *   route and on an actor, and deep through a cursor) with N entries (default 100,000): p50 and p99 of R reads
 *   (default 2,000), one at a time;
 * - pruning's cost: creates per second from 50 callers with a log far from its capacity, and with one held at a
 *   capacity of 1,000 (every write prunes), for 3 seconds each.
 * What a write costs with the log against the store without it comes from `npm run bench:store`, run on this release
 * and on the one before it (docs/performance.md).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Redacted } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"

const argv = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const i = argv.indexOf(name)
  const value = i === -1 ? fallback : Number(argv[i + 1])
  if (!(value > 0)) throw new Error(`${name} needs a positive number`)
  return value
}
const ENTRIES = option("--entries", 100_000)
const READS = option("--reads", 2_000)
// Updates are written one transaction each (creates share them): a few thousand give their entries' size.
const UPDATES = Math.min(2_000, Math.floor(ENTRIES / 2))
const URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres"

type Store = RouteRepository.RouteRepository["Type"]

let counter = 0
const input = () =>
  Effect.orDie(
    Route.decodeCreate({ method: "GET", path: `/bench/${counter++}/:id`, handler: "h", middleware: ["auth"] })
  )

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

const timed = (reads: number, read: () => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const millis: Array<number> = []
    for (let i = 0; i < reads; i++) {
      const start = performance.now()
      yield* Effect.orDie(read())
      millis.push(performance.now() - start)
    }
    millis.sort((a, b) => a - b)
    return `p50 ${percentile(millis, 0.5).toFixed(2)} ms, p99 ${percentile(millis, 0.99).toFixed(2)} ms`
  })

const createsPerSecond = (store: Store, seconds: number) =>
  Effect.gen(function*() {
    let done = 0
    const end = Date.now() + seconds * 1000
    yield* Effect.all(
      Array.from({ length: 50 }, () =>
        Effect.whileLoop({
          while: () => Date.now() < end,
          body: () => Effect.flatMap(input(), (route) => Effect.orDie(store.create(route))),
          step: () => {
            done++
          }
        })),
      { concurrency: "unbounded", discard: true }
    )
    return Math.round(done / seconds)
  })

const onTable = <A, E>(
  options: PgRouteRepository.Options,
  body: (
    store: Store,
    sql: SqlClient.SqlClient,
    log: Context.Tag.Service<RouteRepository.ChangeLog>
  ) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* Effect.orDie(PgRouteRepository.migrate(options))
    const context = yield* PgRouteRepository.makeContext(options)
    const store = Context.get(context, RouteRepository.RouteRepository)
    return yield* body(store, sql, Context.get(context, RouteRepository.ChangeLog)).pipe(
      Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall(options)))
    )
  })

const main = Effect.gen(function*() {
  const table = `rr_bench_log_${process.pid}`
  yield* onTable({ table }, (store, sql, log) =>
    Effect.gen(function*() {
      const routes = yield* Effect.forEach(
        Array.from({ length: ENTRIES - UPDATES }),
        () => Effect.flatMap(input(), (route) => Effect.orDie(store.create(route))),
        { concurrency: 50 }
      )
      yield* Effect.forEach(
        routes.slice(0, UPDATES),
        (route) =>
          Effect.orDie(store.update(route.id, { handler: "h2" as Route.HandlerName }, undefined, { actor: "bench" })),
        { concurrency: 50, discard: true }
      )
      yield* sql`VACUUM ANALYZE ${sql(`${table}_history`)}`
      const [size] = yield* sql<{ bytes: string; entries: string }>`
        SELECT pg_total_relation_size(${`${table}_history`}::regclass)::text AS bytes,
          (SELECT count(*) FROM ${sql(`${table}_history`)})::text AS entries`
      console.log(
        `log entries: ${size!.entries}; bytes per entry (table, TOAST and 4 indexes): ${
          Math.round(Number(size!.bytes) / Number(size!.entries))
        }`
      )
      console.log(`history page of 50, newest first: ${yield* timed(READS, () => log.history({ limit: 50 }))}`)
      const some = routes[Math.floor(routes.length / 2)]!
      console.log(
        `history page of one route: ${yield* timed(READS, () => log.history({ limit: 50, routeId: some.id }))}`
      )
      console.log(
        `history page of one actor: ${yield* timed(READS, () => log.history({ limit: 50, actor: "bench" }))}`
      )
      console.log(`history page, 100th page deep (cursor): ${yield* timed(READS, () =>
        log.history({ limit: 50, before: ENTRIES - 5_000 }))}`)
    }))
  const far = yield* onTable({ table: `${table}_far` }, (store) => createsPerSecond(store, 3))
  const pruning = yield* onTable(
    { table: `${table}_prune`, historyCapacity: 1_000 },
    (store) =>
      Effect.gen(function*() {
        yield* createsPerSecond(store, 2) // fill the log past its capacity first
        return yield* createsPerSecond(store, 3)
      })
  )
  console.log(`creates/s, 50 callers: log far from capacity ${far}; every write pruning (capacity 1,000) ${pruning}`)
})

main.pipe(
  Effect.provide(Layer.orDie(PgClient.layer({ url: Redacted.make(URL), maxConnections: 10 }))),
  Effect.runPromise
)
