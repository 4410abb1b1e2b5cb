import { PgClient } from "@effect/sql-pg"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Scheduler, String as Str } from "effect"
import Pg from "pg"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { repositoryContract } from "./utils/repositoryContract.js"
import * as TestDatabase from "./utils/TestDatabase.js"

const body = (path: string) =>
  Effect.orDie(Route.decodeCreate({ method: "GET", path, middleware: ["a", "b"], handler: "h" }))

layer(TestDatabase.layer())("PgRouteRepository", (it) => {
  describe("contract", () => repositoryContract(it, TestDatabase.storeLayer()))

  it.effect("stores into the table, columns and unique index of its migration", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* RouteRepository.RouteRepository
      const route = yield* Effect.flatMap(body("/users/:id"), repo.create)
      const columns = yield* sql<{ column_name: string; data_type: string }>`
        SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ${table}
        ORDER BY ordinal_position`
      assert.deepStrictEqual(columns.map((c) => `${c.column_name}:${c.data_type}`), [
        "id:uuid",
        "method:text",
        "path:text",
        "path_shape:text",
        "middleware:ARRAY",
        "handler:text",
        "created_at:timestamp with time zone"
      ])
      const indexes = yield* sql<{ indexdef: string }>`SELECT indexdef FROM pg_indexes WHERE tablename = ${table}`
      assert.isTrue(indexes.some((index) => /UNIQUE INDEX .* \(method, path_shape\)/.test(index.indexdef)))
      const rows = yield* sql<{ path_shape: string; middleware: Array<string> }>`
        SELECT path_shape, middleware FROM ${sql(table)} WHERE id = ${route.id}`
      assert.deepStrictEqual(rows, [{ path_shape: "/users/:", middleware: ["a", "b"] }])
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table })))
  })

  it.effect("a route is durable: a new client (a restarted host) reads the same bytes", () =>
    Effect.gen(function*() {
      const table = TestDatabase.freshTable()
      const created = yield* Effect.flatMap(RouteRepository.RouteRepository, (repo) =>
        Effect.flatMap(body("/durable/:id"), repo.create)).pipe(
          Effect.provide(PgRouteRepository.layer({ table }).pipe(Layer.provide(TestDatabase.layer())))
        )
      const found = yield* Effect.flatMap(RouteRepository.RouteRepository, (repo) =>
        repo.findById(created.id)).pipe(
          Effect.provide(TestDatabase.storeLayer({ table }).pipe(Layer.provide(TestDatabase.layer())))
        )
      assert.strictEqual(JSON.stringify(found), JSON.stringify(created))
    }))

  it.effect("works when the host's client transforms names", () =>
    Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      const created = yield* Effect.flatMap(body("/transforms"), repo.create)
      const found = yield* repo.findById(created.id)
      assert.strictEqual(JSON.stringify(found), JSON.stringify(created))
      assert.strictEqual(found.createdAt.getTime(), created.createdAt.getTime())
    }).pipe(
      Effect.provide(
        TestDatabase.storeLayer().pipe(
          Layer.provide(
            TestDatabase.layer({ transformResultNames: Str.snakeToCamel, transformQueryNames: Str.camelToSnake })
          )
        )
      )
    ))

  it.effect("a configured schema is created and used", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const schema = `rr_schema_${process.pid}`
      const repo = yield* RouteRepository.RouteRepository
      const created = yield* Effect.flatMap(body("/in-schema"), repo.create)
      const rows = yield* sql<{ n: string }>`
        SELECT count(*)::text AS n FROM information_schema.tables WHERE table_schema = ${schema}`
      assert.strictEqual(rows[0]!.n, "2") // the routes table and its migrations table
      assert.strictEqual((yield* repo.findById(created.id)).path, "/in-schema")
    }).pipe(
      Effect.provide(TestDatabase.storeLayer({ schema: `rr_schema_${process.pid}` })),
      Effect.ensuring(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`DROP SCHEMA IF EXISTS ${sql(`rr_schema_${process.pid}`)} CASCADE`.pipe(Effect.orDie)))
    ))

  it.effect("migrations run once when several clients start at the same moment", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const table = TestDatabase.freshTable()
      // Separate clients (separate pools on the server) stand in for separate host processes.
      const results = yield* Effect.all(
        Array.from({ length: 6 }, () =>
          Effect.exit(PgRouteRepository.migrate({ table }).pipe(Effect.provide(TestDatabase.layer())))),
        { concurrency: "unbounded" }
      )
      for (const result of results) {
        assert.isTrue(Exit.isSuccess(result), String(result))
      }
      const migrations = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM ${sql(`${table}_migrations`)}`
      assert.strictEqual(migrations[0]!.n, "1")
      yield* sql`DROP TABLE ${sql(table)}, ${sql(`${table}_migrations`)}`
    }))

  describe("an operation past queryTimeout fails with StoreUnavailable", () => {
    // A pool of one connection, held by another fiber: the next operation waits for it, and only the timeout can
    // answer. Run on the default scheduler and on an immediate one (as the Node listener runs requests), where
    // interrupting the waiting operation completes it at once: the caller must still get the timeout.
    for (const scheduler of ["default", "immediate"] as const) {
      it.effect(`on the ${scheduler} scheduler`, () => {
        const table = TestDatabase.freshTable()
        return Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const repo = yield* RouteRepository.RouteRepository
          const created = yield* Effect.flatMap(body("/slow"), repo.create)
          const held = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const holder = yield* sql.withTransaction(
            Effect.zipRight(Deferred.succeed(held, undefined), Deferred.await(release))
          ).pipe(Effect.fork)
          yield* Deferred.await(held)
          const lookup = repo.findById(created.id)
          const exit = yield* Effect.exit(
            scheduler === "immediate" ? Effect.withScheduler(lookup, Scheduler.make((task) => task())) : lookup
          )
          assert.isTrue(Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause), String(exit))
          assert.include(String(exit), "StoreUnavailable")
          assert.include(String(exit), "did not answer within 300ms")
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(holder)
          assert.strictEqual((yield* repo.findById(created.id)).id, created.id) // the store recovers
        }).pipe(
          Effect.provide(
            TestDatabase.storeLayer({ table, queryTimeout: "300 millis" }).pipe(
              Layer.provideMerge(TestDatabase.layer({ maxConnections: 1 }))
            )
          )
        )
      })
    }
  })

  it("refuses a table or schema name that is not a plain identifier when the layer is made", () => {
    assert.throws(() => PgRouteRepository.layer({ table: "Routes; DROP" }), /lowercase SQL identifier/)
    assert.throws(() => PgRouteRepository.layer({ schema: "a.b" }), /lowercase SQL identifier/)
  })
})

describe("PgRouteRepository without a database", () => {
  // Nothing listens on port 1: every connection is refused.
  const unreachable = PgClient.layerFromPool({
    acquire: Effect.acquireRelease(
      Effect.sync(() => new Pg.Pool({ host: "127.0.0.1", port: 1, connectionTimeoutMillis: 2000 })),
      (pool) => Effect.promise(() => pool.end())
    )
  })

  it.effect("create and findById fail with StoreUnavailable, never a defect", () =>
    Effect.gen(function*() {
      const repo = yield* PgRouteRepository.make()
      const created = yield* Effect.flip(Effect.flatMap(body("/x"), repo.create))
      assert.strictEqual(created._tag, "StoreUnavailable")
      const found = yield* Effect.flip(repo.findById(Route.makeRouteId(0)))
      assert.strictEqual(found._tag, "StoreUnavailable")
    }).pipe(Effect.provide(unreachable)))

  it.effect("the layer fails with StoreUnavailable when it cannot migrate", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Layer.build(PgRouteRepository.layer()).pipe(Effect.scoped))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.include(String(exit.cause), "StoreUnavailable")
    }).pipe(Effect.provide(unreachable)))

  it("classifies connection failures as unavailable and query errors as defects", () => {
    assert.isTrue(PgRouteRepository.isUnavailable({ code: "ECONNREFUSED" }))
    assert.isTrue(PgRouteRepository.isUnavailable({ cause: { code: "57P01" } }))
    assert.isTrue(PgRouteRepository.isUnavailable(new Error("Connection terminated unexpectedly")))
    assert.isTrue(PgRouteRepository.isUnavailable(new AggregateError([new Error("x"), { code: "ECONNRESET" }])))
    assert.isFalse(PgRouteRepository.isUnavailable({ code: "42601" })) // syntax error: our bug, not the network
    assert.isFalse(PgRouteRepository.isUnavailable({ code: "23505" }))
  })
})
