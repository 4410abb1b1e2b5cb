import { PgClient } from "@effect/sql-pg"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"
import { assert, describe, it, layer } from "@effect/vitest"
import {
  Cause,
  Context,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  Layer,
  Schedule,
  Scheduler,
  String as Str,
  TestServices
} from "effect"
import Pg from "pg"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Logged from "./utils/logged.js"
import { methodName, repositoryContract } from "./utils/repositoryContract.js"
import * as TestDatabase from "./utils/TestDatabase.js"

const body = (path: string) =>
  Effect.orDie(Route.decodeCreate({ method: "GET", path, middleware: ["a", "b"], handler: "h" }))

layer(TestDatabase.layer())("PgRouteRepository", (it) => {
  describe("contract", () =>
    repositoryContract(
      it,
      TestDatabase.storeLayer(),
      (historyCapacity) => TestDatabase.storeLayer({ historyCapacity })
    ))

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
        "created_at:timestamp with time zone",
        "revision:bigint",
        "txid:xid8",
        "enabled:boolean",
        "split:jsonb",
        "middleware_config:jsonb",
        "description:text",
        "tags:ARRAY",
        "when_key:text"
      ])
      const indexes = yield* sql<{ indexname: string; indexdef: string }>`
        SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ${table} ORDER BY indexname`
      const definitions = indexes.map((index) => index.indexdef.replace(/^.* USING /, "").replace(/ON .* USING /, ""))
      assert.deepStrictEqual(indexes.map((index) => index.indexname), [
        `${table}_disabled_idx`,
        `${table}_handler_id_idx`,
        `${table}_method_id_idx`,
        `${table}_method_shape_key`,
        `${table}_middleware_idx`,
        `${table}_path_idx`,
        `${table}_pkey`,
        `${table}_search_text_idx`,
        `${table}_tags_idx`,
        `${table}_txid_idx`
      ])
      assert.deepStrictEqual(definitions, [
        "btree (id) WHERE (NOT enabled)",
        "btree (handler, id)",
        "btree (method, id)",
        "btree (method, path_shape, when_key)",
        "gin (middleware)",
        "btree (path COLLATE \"C\")",
        "btree (id)",
        // pg_trgm is installed on the test server (migrations 8 and 11 create it where they can)
        `gin (${table}_search_text(path, handler, middleware, description, tags) gin_trgm_ops)`,
        "gin (tags)",
        "btree (txid)"
      ])
      const rows = yield* sql<{ path_shape: string; middleware: Array<string>; revision: string }>`
        SELECT path_shape, middleware, revision::text FROM ${sql(table)} WHERE id = ${route.id}`
      assert.deepStrictEqual(rows, [{
        path_shape: "/users/:",
        middleware: ["a", "b"],
        revision: String(route.revision)
      }])
      // The revisions come from a sequence of the store's own, dropped with its table.
      const owned = yield* sql<{ owner: string }>`
        SELECT pg_get_serial_sequence(${table}, 'revision') AS owner`
      assert.match(owned[0]!.owner, new RegExp(`(^|\\.)${table}_revision_seq$`))
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table })))
  })

  it.effect("a route is durable: a new client (a restarted host) reads the same bytes", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const created = yield* Effect.flatMap(
        RouteRepository.RouteRepository,
        (repo) => Effect.flatMap(body("/durable/:id"), repo.create)
      ).pipe(
        Effect.provide(PgRouteRepository.layer({ table }).pipe(Layer.provide(TestDatabase.layer())))
      )
      const found = yield* Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.findById(created.id)).pipe(
        Effect.provide(TestDatabase.storeLayer({ table }).pipe(Layer.provide(TestDatabase.layer())))
      )
      assert.strictEqual(JSON.stringify(found), JSON.stringify(created))
    }).pipe(
      Effect.ensuring(
        Effect.orDie(PgRouteRepository.uninstall({ table }))
      )
    )
  })

  it.effect("updates and removes are durable: a new client reads the updated route, then finds it gone", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const session = <A, E>(use: (repo: RouteRepository.RouteRepository["Type"]) => Effect.Effect<A, E>) =>
        Effect.flatMap(RouteRepository.RouteRepository, use).pipe(
          Effect.provide(PgRouteRepository.layer({ table }).pipe(Layer.provide(TestDatabase.layer())))
        )
      const created = yield* session((repo) => Effect.flatMap(body("/durable/update"), repo.create))
      const updated = yield* session((repo) =>
        repo.update(created.id, { handler: "changed" as Route.HandlerName }, { ifMatch: [created.revision] })
      )
      assert.strictEqual(JSON.stringify(yield* session((repo) => repo.findById(created.id))), JSON.stringify(updated))
      yield* session((repo) => repo.remove(created.id, { ifMatch: [updated.revision] }))
      const gone = yield* session((repo) => Effect.flip(repo.findById(created.id)))
      assert.strictEqual(gone._tag, "RouteNotFound")
    }).pipe(
      Effect.ensuring(
        Effect.orDie(PgRouteRepository.uninstall({ table }))
      )
    )
  })

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
      const rows = yield* sql<{ table_name: string }>`
        SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema}`
      const names = rows.map((row) => row.table_name)
      const routes = names.find((name) => names.includes(`${name}_migrations`))
      assert.isDefined(routes, names.join(", "))
      for (const suffix of ["_removals", "_feed"]) assert.include(names, routes + suffix)
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
      assert.strictEqual(migrations[0]!.n, String(Object.keys(PgRouteRepository.migrations()).length))
      yield* PgRouteRepository.uninstall({ table })
    }))

  it.effect("migration 2 upgrades a live table of release 0.1, with several hosts starting at once", () => {
    const table = TestDatabase.freshTable()
    const migrationsTable = `${table}_migrations`
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // Release 0.1: its migrations table holding migration 1 only, and routes inserted as it inserted them.
      yield* Migrator.make({})({
        loader: Migrator.fromRecord({ "1_create_routes": PgRouteRepository.migrations({ table })["1_create_routes"] }),
        table: migrationsTable
      })
      const insertAsRelease01 = (id: string, method: string, path: string, middleware: Array<string>) =>
        sql`INSERT INTO ${sql(table)} (id, method, path, path_shape, middleware, handler, created_at)
            VALUES (${id}, ${method}, ${path}, ${Route.shapeOf(path as Route.RoutePath)}, ${middleware}, ${"old"},
                    ${new Date("2026-01-02T03:04:05.678Z")})`
      const old = [
        [Route.makeRouteId(1000), "GET", "/users/:id", ["auth", "log"]],
        [Route.makeRouteId(2000), "POST", "/users", []],
        [Route.makeRouteId(3000), "M-SEARCH", "/", ["x"]]
      ] as const
      for (const [id, method, path, middleware] of old) yield* insertAsRelease01(id, method, path, [...middleware])

      // Separate clients stand in for host processes of the new release starting together.
      const results = yield* Effect.all(
        Array.from(
          { length: 4 },
          () => Effect.exit(PgRouteRepository.migrate({ table }).pipe(Effect.provide(TestDatabase.layer())))
        ),
        { concurrency: "unbounded" }
      )
      for (const result of results) assert.isTrue(Exit.isSuccess(result), String(result))
      const applied = yield* sql<{ name: string }>`SELECT name FROM ${sql(migrationsTable)} ORDER BY migration_id`
      assert.deepStrictEqual(
        applied.map((row) => row.name),
        Object.keys(PgRouteRepository.migrations()).map((key) => key.replace(/^\d+_/, ""))
      )

      const repo = yield* PgRouteRepository.make({ table })
      const revisions = new Set<number>()
      for (const [id, method, path, middleware] of old) {
        const found = yield* repo.findById(id)
        assert.deepStrictEqual(JSON.parse(Route.toJson(found)), {
          id,
          method,
          path,
          middleware,
          handler: "old",
          createdAt: "2026-01-02T03:04:05.678Z"
        })
        assert.isTrue(Number.isSafeInteger(found.revision) && found.revision > 0)
        revisions.add(found.revision)
      }
      assert.strictEqual(revisions.size, old.length)
      const page = yield* repo.list({ limit: 10, middleware: "auth" })
      assert.deepStrictEqual(page.items.map((route) => route.id), [old[0][0]])

      // The new operations work on the old rows.
      const conflict = yield* Effect.flip(Effect.flatMap(body("/users/:userId"), repo.create))
      assert.strictEqual(conflict._tag, "RouteConflict")
      const updated = yield* repo.update(old[1][0], { path: "/people" as Route.RoutePath })
      assert.isAbove(updated.revision, Math.max(...revisions))
      yield* repo.remove(old[2][0], { ifMatch: [(yield* repo.findById(old[2][0])).revision] })
      // A host still on release 0.1, sharing the database during a rolling upgrade, keeps inserting.
      const late = Route.makeRouteId(4000)
      yield* insertAsRelease01(late, "GET", "/late", [])
      assert.isAbove((yield* repo.findById(late)).revision, updated.revision)
    }).pipe(
      Effect.ensuring(
        Effect.orDie(PgRouteRepository.uninstall({ table }))
      )
    )
  })

  it.effect("migration 5 keeps the idempotency keys stored before it: a replay gives their first answer", () => {
    const table = TestDatabase.freshTable()
    const migrationsTable = `${table}_migrations`
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const all = PgRouteRepository.migrations({ table })
      yield* Migrator.make({})({
        loader: Migrator.fromRecord({
          "1_create_routes": all["1_create_routes"],
          "2_add_revisions_and_list_indexes": all["2_add_revisions_and_list_indexes"],
          "3_add_change_feed": all["3_add_change_feed"],
          "4_idempotency_keys": all["4_idempotency_keys"]
        }),
        table: migrationsTable
      })
      // Keys as migration 4's store wrote them: the request's canonical text, and the whole first answer.
      const created = { method: "GET", path: "/users/:id", middleware: ["auth"], handler: "show" }
      const conflicted = { method: "GET", path: "/teams/:id", middleware: [], handler: "team" }
      const first = {
        id: Route.makeRouteId(1000),
        ...created,
        createdAt: "2026-01-02T03:04:05.678Z",
        revision: 7
      }
      const holder = Route.makeRouteId(2000)
      const canonical = (r: typeof created) => JSON.stringify([r.method, r.path, r.middleware, r.handler])
      const expires = new Date(Date.now() + 3_600_000)
      yield* sql`INSERT INTO ${sql(`${table}_idempotency`)} (principal, key, fingerprint, outcome, expires_at) VALUES
        ('admin', 'created', ${canonical(created)}, ${JSON.stringify({ route: first })}::jsonb, ${expires}),
        ('admin', 'conflicted', ${canonical(conflicted)},
         ${JSON.stringify({ conflict: { ...conflicted, conflictingRouteId: holder } })}::jsonb, ${expires})`
      yield* PgRouteRepository.migrate({ table })
      const { createIdempotent } = Context.get(
        yield* PgRouteRepository.makeContext({ table }),
        RouteRepository.Idempotent
      )
      const idempotency = (key: string): RouteRepository.Idempotency => ({
        key,
        principal: "admin",
        expiresAfter: Duration.hours(1),
        maxKeys: 100,
        maxBytes: 1 << 20
      })
      const again = yield* createIdempotent(yield* Route.decodeCreate(created), idempotency("created"))
      assert.isTrue(again.replayed)
      assert.deepStrictEqual(JSON.parse(JSON.stringify(Either.getOrThrow(again.outcome))), first)
      const refused = yield* createIdempotent(yield* Route.decodeCreate(conflicted), idempotency("conflicted"))
      assert.isTrue(refused.replayed)
      assert.strictEqual(Either.getOrThrow(Either.flip(refused.outcome)).conflictingRouteId, holder)
      const reused = yield* Effect.flip(
        createIdempotent(yield* Route.decodeCreate(conflicted), idempotency("created"))
      )
      assert.strictEqual(reused._tag, "IdempotencyKeyReused")
      const columns = yield* sql<{ column_name: string }>`
        SELECT column_name FROM information_schema.columns WHERE table_name = ${`${table}_idempotency`}
        ORDER BY ordinal_position`
      assert.deepStrictEqual(columns.map((c) => c.column_name), [
        "principal",
        "key",
        "expires_at",
        "fingerprint",
        "route_id",
        "created_at",
        "revision",
        "batch_answer" // migration 14: an applied batch's answer, for a batch's key
      ])
    }).pipe(Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
  })

  it.effect("migration 11 (descriptions, tags, middleware configs) keeps the routes stored before it byte for byte", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const all = PgRouteRepository.migrations({ table })
      // A populated table of the release before: migrations 1 to 10, routes inserted as its store inserted them.
      yield* Migrator.make({})({
        loader: Migrator.fromRecord(Object.fromEntries(
          Object.entries(all).filter(([name]) => Number(name.split("_")[0]) <= 10)
        )),
        table: `${table}_migrations`
      })
      const createdAt = "2026-01-02T03:04:05.678Z"
      const old = [
        { id: Route.makeRouteId(1000), method: "GET", path: "/users/:id", middleware: ["auth", "log"], enabled: true },
        { id: Route.makeRouteId(2000), method: "POST", path: "/users", middleware: [], enabled: true },
        { id: Route.makeRouteId(3000), method: "DELETE", path: "/users/:id", middleware: ["auth"], enabled: false }
      ]
      for (const route of old) {
        yield* sql`INSERT INTO ${sql(table)} (id, method, path, path_shape, middleware, handler, created_at, enabled)
          VALUES (${route.id}, ${route.method}, ${route.path}, ${Route.shapeOf(route.path as Route.RoutePath)},
                  ${route.middleware}, ${"old"}, ${new Date(createdAt)}, ${route.enabled})`
      }
      const json = (route: typeof old[number]) =>
        `{"id":"${route.id}","method":"${route.method}","path":"${route.path}","middleware":${
          JSON.stringify(route.middleware)
        },"handler":"old","createdAt":"${createdAt}"${route.enabled ? "" : `,"enabled":false`}}`

      yield* PgRouteRepository.migrate({ table })
      const context = yield* PgRouteRepository.makeContext({ table })
      const repo = Context.get(context, RouteRepository.RouteRepository)
      for (const route of old) assert.strictEqual(Route.toJson(yield* repo.findById(route.id)), json(route))
      const listed = yield* repo.list({ limit: 10 })
      assert.deepStrictEqual(listed.items.map(Route.toJson), old.map(json))
      // The new filters and fields work on the old rows: no tags yet, and the search still reads their paths.
      assert.lengthOf((yield* repo.list({ limit: 10, tag: "team:accounts" })).items, 0)
      assert.deepStrictEqual((yield* repo.list({ limit: 10, q: "/users/:id" })).items.map((r) => r.id), [
        old[0]!.id,
        old[2]!.id
      ])
      const configured = yield* repo.update(
        old[0]!.id,
        yield* Route.decodePatch({
          middleware: ["auth", { name: "rateLimit", config: { max: 100 } }],
          tags: ["team:accounts"]
        })
      )
      assert.strictEqual(
        Route.toJson(yield* repo.findById(old[0]!.id)),
        json({ ...old[0]!, middleware: [] }).replace(
          `"middleware":[]`,
          `"middleware":["auth",{"name":"rateLimit","config":{"max":100}}]`
        ).replace(/}$/, `,"tags":["team:accounts"]}`)
      )
      assert.strictEqual(Route.toJson(configured), Route.toJson(yield* repo.findById(old[0]!.id)))
      assert.deepStrictEqual((yield* repo.list({ limit: 10, tag: "team:accounts" })).items.map((r) => r.id), [
        old[0]!.id
      ])
      // The old row, as the log kept it before the change, reads as it did before the migration.
      const [entry] =
        (yield* Context.get(context, RouteRepository.ChangeLog).history({ limit: 1, routeId: old[0]!.id }))
          .items
      assert.strictEqual(Route.toJson(entry!.before!), json(old[0]!))
    }).pipe(Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
  })

  it.effect("the method bound holds for two processes adding methods at once, and for any writer's SQL", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* PgRouteRepository.migrate({ table })
      // Two stores, each on a pool of its own: two host processes.
      const process = () =>
        Effect.flatMap(
          Layer.build(TestDatabase.layer()),
          (context) => PgRouteRepository.make({ table }).pipe(Effect.provide(context))
        )
      const one = yield* process()
      const two = yield* process()
      for (let i = 0; i < RouteRepository.MAX_METHODS - 1; i++) {
        yield* one.create(yield* Route.decodeCreate({ method: methodName(i), path: "/methods", handler: "h" }))
      }
      const results = yield* Effect.all(
        Array.from({ length: 16 }, (_, i) =>
          Effect.flatMap(
            Route.decodeCreate({ method: methodName(i, "RACE-"), path: "/race", handler: "h" }),
            (input) => Effect.either((i % 2 === 0 ? one : two).create(input))
          )),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.filter(Either.isRight).length, 1)
      for (const result of results) if (Either.isLeft(result)) assert.strictEqual(result.left._tag, "TooManyMethods")
      const methods = yield* sql<{ n: string }>`SELECT count(DISTINCT method)::text AS n FROM ${sql(table)}`
      assert.strictEqual(methods[0]!.n, String(RouteRepository.MAX_METHODS))
      // An operator's INSERT is held to the bound too, by the database.
      const insert = yield* Effect.flip(
        sql`INSERT INTO ${sql(table)} (id, method, path, path_shape, middleware, handler, created_at)
            VALUES (${Route.makeRouteId(0)}, 'BY-HAND', '/x', '/x', '{}', 'h', now())`
      )
      assert.match(String(insert.cause), /distinct methods, the most it holds, and BY-HAND is not one of them/)
    }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
  })

  it.effect("change sets of two processes taking one shape at once: exactly one commits, whole and consecutive", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* PgRouteRepository.migrate({ table })
      // Two stores, each on a pool of its own: two host processes.
      const process = () =>
        Effect.flatMap(
          Layer.build(TestDatabase.layer()),
          (context) =>
            PgRouteRepository.makeContext({ table }).pipe(
              Effect.map(Context.get(RouteRepository.Batches)),
              Effect.provide(context)
            )
        )
      const stores = [yield* process(), yield* process()]
      const SIZE = 50
      // Each batch creates routes of its own and, last, the one shape every batch takes.
      const results = yield* Effect.all(
        Array.from({ length: 6 }, (_, b) =>
          Effect.gen(function*() {
            const paths = [...Array.from({ length: SIZE - 1 }, (_, i) => `/race/${b}/${i}`), "/race/:id"]
            const operations = yield* Effect.forEach(paths, (path) =>
              Effect.map(body(path), (route) => ({ op: "create" as const, route })))
            return yield* Effect.either(stores[b % 2]!.applyBatch(operations))
          })),
        { concurrency: "unbounded" }
      )
      const won = results.filter(Either.isRight)
      assert.strictEqual(won.length, 1)
      for (const result of results) {
        if (Either.isLeft(result)) {
          assert.strictEqual(result.left._tag, "BatchRefused")
          const refused = result.left as RouteRepository.BatchRefused
          assert.deepStrictEqual([refused.index, refused.reason._tag], [SIZE - 1, "RouteConflict"])
        }
      }
      const applied = won[0]!.right
      const revisions = applied.results.map((result) => result.revision)
      assert.deepStrictEqual(revisions, Array.from({ length: SIZE }, (_, i) => revisions[0]! + i))
      const rows = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM ${sql(table)}`
      assert.strictEqual(rows[0]!.n, String(SIZE))
      const entries = yield* sql<{ batch: string; n: string; low: string; high: string }>`
        SELECT batch::text, count(*)::text AS n, min(revision)::text AS low, max(revision)::text AS high
        FROM ${sql(`${table}_history`)} GROUP BY batch`
      assert.deepStrictEqual(entries, [{
        batch: applied.batch,
        n: String(SIZE),
        low: String(revisions[0]),
        high: String(applied.revision)
      }])
    }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
  })

  it.effect("concurrent creates and gets share statements; a conflict in a batch fails only its own create", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      const held = yield* Effect.flatMap(body("/held"), repo.create)
      const sent: Array<string> = []
      const counting = Statement.withTransformer((statement) =>
        Effect.sync(() => (sent.push(statement.compile(true)[0]), statement))
      )
      // 20 new routes, two creates of one shape, and one of the shape `held` has: all at the same moment.
      const paths = [...Array.from({ length: 20 }, (_, i) => `/batch/${i}`), "/twice/:a", "/twice/:b", "/held"]
      const results = yield* Effect.all(
        paths.map((path) => Effect.either(Effect.flatMap(body(path), repo.create))),
        { concurrency: "unbounded" }
      ).pipe(counting)
      const inserts = sent.filter((text) => text.includes("INSERT"))
      assert.isBelow(inserts.length, paths.length / 2, `creates shared statements: ${inserts.length} inserts`)
      const created = results.filter((result) => result._tag === "Right")
      assert.strictEqual(created.length, 21)
      const refused = results.flatMap((result) => result._tag === "Left" ? [result.left] : [])
      assert.deepStrictEqual(refused.map((error) => error._tag).sort(), ["RouteConflict", "RouteConflict"])
      const twice = created.find((result) => result.right.path.startsWith("/twice/"))!.right
      assert.includeMembers(refused.map((error) => (error as RouteRepository.RouteConflict).conflictingRouteId), [
        held.id,
        twice.id
      ])

      sent.length = 0
      const ids = [...created.map((result) => result.right.id), "01a20830-0000-7000-8000-000000000000"]
      const found = yield* Effect.all(ids.map((id) => Effect.either(repo.findById(id))), { concurrency: "unbounded" })
        .pipe(counting)
      assert.isBelow(sent.length, ids.length / 2, `gets shared statements: ${sent.length} selects`)
      assert.deepStrictEqual(
        found.map((result) => result._tag === "Right" ? result.right.id : result.left._tag),
        [...ids.slice(0, -1), "RouteNotFound"]
      )
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table })))
  })

  it.effect("concurrent updates share a transaction; a refused one leaves the others, each logged at its revision", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      const held = yield* Effect.flatMap(body("/held"), repo.create)
      const routes = yield* Effect.forEach([0, 1, 2, 3, 4, 5], (i) => Effect.flatMap(body(`/u/${i}`), repo.create))
      const [r0, r1, r2, r3, r4, r5] = routes as [Route.StoredRoute, ...Array<Route.StoredRoute>]
      const start = (yield* Logged.logAfter(0, 0)).revision
      const handler = (name: string) => ({ handler: name as Route.HandlerName })
      // All at the same moment: four that land (r0 twice, the second after the first) and four refusals of each kind.
      const results = yield* Effect.all(
        [
          repo.update(r0.id, handler("first")),
          repo.update(r1!.id, { path: "/held" as Route.RoutePath }),
          repo.update(r2!.id, handler("late"), { ifMatch: [r2!.revision + 100] }),
          repo.update("01a20830-0000-7000-8000-000000000000", handler("nobody")),
          repo.update(r3!.id, { path: "/moved/:x" as Route.RoutePath }),
          repo.update(r4!.id, handler("theirs"), { pathPrefixes: ["/elsewhere"] }),
          repo.update(r0.id, handler("second")),
          repo.update(r5!.id, { middleware: ["c"] as Array<Route.MiddlewareName> })
        ].map(Effect.either),
        { concurrency: "unbounded" }
      )
      // Every row a transaction writes carries its id (migration 3): the changed routes carry one.
      const sql = yield* SqlClient.SqlClient
      const transactions = yield* sql<{ count: number }>`
        SELECT count(DISTINCT txid)::int AS count FROM ${sql(table)} WHERE id IN (${r0.id}, ${r3!.id}, ${r5!.id})`
      assert.strictEqual(transactions[0]!.count, 1, "the updates shared a transaction")
      assert.deepStrictEqual(results.map((result) => result._tag === "Right" ? "ok" : result.left._tag), [
        "ok",
        "RouteConflict",
        "PreconditionFailed",
        "RouteNotFound",
        "ok",
        "OutsidePrefixes",
        "ok",
        "ok"
      ])
      const conflict = results[1]!
      assert.strictEqual(
        conflict._tag === "Left" && conflict.left._tag === "RouteConflict" && conflict.left.conflictingRouteId,
        held.id
      )
      const landed = [0, 4, 6, 7].flatMap((i) => {
        const result = results[i]!
        return result._tag === "Right" ? [result.right] : []
      })
      assert.strictEqual(landed.length, 4)
      const revisions = landed.map((route) => route.revision)
      assert.isAbove(revisions[0]!, start)
      assert.isTrue(revisions.every((revision, i) => i === 0 || revision > revisions[i - 1]!), `${revisions}`)
      // The log holds the four changes and nothing of the refused ones; each entry's before is the route as the
      // change before it in the batch left it.
      const log = yield* Logged.logAfter(start, 100)
      assert.deepStrictEqual(log.entries.map((entry) => [entry.revision, entry.action, entry.routeId]), [
        [revisions[0], "update", r0.id],
        [revisions[1], "update", r3!.id],
        [revisions[2], "update", r0.id],
        [revisions[3], "update", r5!.id]
      ])
      assert.strictEqual(log.entries[0]!.before!.handler, "h")
      assert.strictEqual(log.entries[2]!.before!.handler, "first")
      assert.strictEqual(log.entries[2]!.after!.handler, "second")
      assert.strictEqual(log.entries[1]!.after!.path, "/moved/:x")
      assert.strictEqual(log.revision, revisions[3])
      // Nothing of a refused change was written.
      for (const route of [r1!, r2!, r4!]) assert.deepStrictEqual(yield* repo.findById(route.id), route)
      assert.strictEqual((yield* repo.findById(r0.id)).handler, "second")
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table })))
  })

  it.effect("a batch of creates waiting for the counter while another writer stores one of its shapes: that one is refused", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      yield* Effect.flatMap(body("/first"), repo.create)
      const connect = Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new Pg.Client({ connectionString: TestDatabase.url })
          await client.connect()
          return client
        }),
        (client) => Effect.promise(() => client.end())
      )
      const other = yield* connect
      // Watched from a session outside any transaction: a transaction sees pg_stat_activity as it first read it.
      const watcher = yield* connect
      const query = (text: string, values: ReadonlyArray<unknown> = []) =>
        Effect.promise(() => other.query(text, [...values]))
      // Another writer holds the counter, so the batch's statement (its snapshot taken) waits for it.
      yield* query(`BEGIN; SELECT revision FROM ${table}_revision FOR UPDATE`)
      const batch = yield* Effect.fork(Effect.all(
        ["/a", "/taken/:x", "/b"].map((path) => Effect.either(Effect.flatMap(body(path), repo.create))),
        { concurrency: "unbounded" }
      ))
      // Waited for on the real clock (the test's clock stands still).
      yield* Effect.promise(async () => {
        for (;;) {
          const waiting = await watcher.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
              AND query LIKE '%json_to_recordset%'`
          )
          if (waiting.rows.length > 0) return
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
      })
      const taken = yield* query(
        `INSERT INTO ${table} (id, method, path, path_shape, middleware, handler, created_at)
          VALUES (gen_random_uuid(), 'GET', '/taken/:y', $1, '{}', 'h', now()) RETURNING id::text`,
        [Route.shapeOf("/taken/:y" as Route.RoutePath)]
      )
      yield* query("COMMIT")
      const results = yield* Fiber.join(batch)
      assert.deepStrictEqual(results.map((result) => result._tag === "Right" ? result.right.path : result.left._tag), [
        "/a",
        "RouteConflict",
        "/b"
      ])
      const conflict = results[1]!
      assert.strictEqual(
        conflict._tag === "Left" && conflict.left._tag === "RouteConflict" && conflict.left.conflictingRouteId,
        taken.rows[0]!.id
      )
      // The two created routes have their entries; the revision numbered for the refused one is skipped, never reused.
      const [a, b] = [results[0]!, results[2]!].flatMap((result) => result._tag === "Right" ? [result.right] : [])
      const entries = (yield* Logged.history({ limit: 10, action: "create" })).items
      assert.deepStrictEqual(entries.slice(0, 2).map((entry) => [entry.revision, entry.routeId]), [
        [b!.revision, b!.id],
        [a!.revision, a!.id]
      ])
      assert.isAbove(b!.revision, a!.revision)
      const next = yield* Effect.flatMap(body("/next"), repo.create)
      assert.isAbove(next.revision, b!.revision)
    }).pipe(Effect.scoped, Effect.provide(TestDatabase.storeLayer({ table })))
  })

  it.effect("every listing filter reads an index, never the whole table (EXPLAIN over 4,000 routes)", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* RouteRepository.RouteRepository
      yield* sql`
        INSERT INTO ${sql(table)} (id, method, path, path_shape, middleware, handler, created_at, tags, enabled,
          description)
        SELECT gen_random_uuid(), (ARRAY['GET', 'POST', 'PUT', 'DELETE', 'PATCH'])[1 + i % 5], '/r' || i % 97 || '/x' || i,
               '/r' || i % 97 || '/x' || i,
               CASE WHEN i % 1000 = 0 THEN ARRAY['auth', 'rare'] ELSE ARRAY['auth'] END, 'h' || i % 200, now(),
               CASE WHEN i % 1000 = 0 THEN ARRAY['team:rare'] ELSE ARRAY['team:web'] END, i % 1000 <> 0,
               CASE WHEN i % 1000 = 0 THEN 'the scarce ones' ELSE 'a route' END
        FROM generate_series(1, 4000) AS i`
      yield* sql`ANALYZE ${sql(table)}`
      const middle = (yield* sql<{ id: string }>`SELECT id FROM ${sql(table)} ORDER BY id OFFSET 2000 LIMIT 1`)[0]!.id
      // The statement the store sends for a listing, captured as it runs, then explained with the same values.
      const planOf = (query: RouteRepository.ListQuery) =>
        Effect.gen(function*() {
          const sent: Array<readonly [string, ReadonlyArray<unknown>]> = []
          yield* repo.list(query).pipe(
            Statement.withTransformer((statement) => Effect.sync(() => (sent.push(statement.compile(true)), statement)))
          )
          assert.strictEqual(sent.length, 1, "one statement per page")
          const rows = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN ${sent[0]![0]}`, sent[0]![1])
          return rows.map((row) => row["QUERY PLAN"]).join("\n")
        })
      const cases: ReadonlyArray<readonly [RouteRepository.ListQuery, indexes: ReadonlyArray<string>]> = [
        [{ limit: 100 }, ["pkey"]],
        [{ limit: 100, after: middle }, ["pkey"]],
        [{ limit: 100, method: "GET" }, ["method_id_idx"]],
        [{ limit: 100, method: "GET", after: middle }, ["method_id_idx"]],
        [{ limit: 100, handler: "h5" }, ["handler_id_idx"]],
        [{ limit: 100, handler: "h5", after: middle }, ["handler_id_idx"]],
        [{ limit: 100, middleware: "rare" }, ["middleware_idx"]],
        [{ limit: 100, tag: "team:rare" }, ["tags_idx"]],
        [{ limit: 100, enabled: false }, ["disabled_idx"]],
        [{ limit: 100, q: "scarce" }, ["search_text_idx"]],
        [{ limit: 100, pathPrefix: "/r5/x100" }, ["path_idx"]],
        [{ limit: 100, pathPrefix: "/r5/x100", after: middle }, ["path_idx"]],
        [{ limit: 100, method: "GET", handler: "h5" }, ["method_id_idx", "handler_id_idx"]],
        // Filters every route passes: walking the ids in order ends with the page.
        [{ limit: 100, middleware: "auth" }, ["pkey"]],
        [{ limit: 100, pathPrefix: "/r" }, ["pkey"]]
      ]
      for (const [query, indexes] of cases) {
        const plan = yield* planOf(query)
        const label = `${JSON.stringify(query)}:\n${plan}`
        assert.notInclude(plan, "Seq Scan", label)
        assert.isTrue(indexes.some((index) => plan.includes(`${table}_${index}`)), label)
      }
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table })))
  })

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
          const operations: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
            repo.findById(created.id),
            repo.list({ limit: 10 }),
            repo.update(created.id, { handler: "x" as Route.HandlerName }),
            repo.remove(created.id)
          ]
          for (const operation of operations) {
            const exit = yield* Effect.exit(
              scheduler === "immediate" ? Effect.withScheduler(operation, Scheduler.make((task) => task())) : operation
            )
            assert.isTrue(Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause), String(exit))
            assert.include(String(exit), "StoreUnavailable")
            assert.include(String(exit), "did not answer within 300ms")
          }
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(holder)
          assert.strictEqual((yield* repo.findById(created.id)).id, created.id) // the store recovers
        }).pipe(
          // On a live clock: the timeout waits on the caller's Clock, and here a real connection is what it waits for.
          TestServices.provideLive,
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

  it.effect("every operation fails with StoreUnavailable, never a defect", () =>
    Effect.gen(function*() {
      const repo = yield* PgRouteRepository.make()
      const id = Route.makeRouteId(0)
      const failures = yield* Effect.all([
        Effect.flip(Effect.flatMap(body("/x"), repo.create)),
        Effect.flip(repo.findById(id)),
        Effect.flip(repo.list({ limit: 10, method: "GET" })),
        Effect.flip(repo.update(id, { handler: "x" as Route.HandlerName }, { ifMatch: [1] })),
        Effect.flip(repo.remove(id))
      ])
      assert.deepStrictEqual(failures.map((failure) => failure._tag), Array(5).fill("StoreUnavailable"))
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

describe("PgRouteRepository, the method bound under a delete", () => {
  // The race a count alone would lose: a write of a stored method is in flight while the last route of that method is
  // deleted and another writer adds a method. The write keeps a route of its method in place until it commits.
  it.live("a write of a stored method keeps it stored: the delete waits, and the new method is refused", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* PgRouteRepository.migrate({ table })
      const store = yield* PgRouteRepository.make({ table })
      const create = (method: string, path: string) =>
        Effect.flatMap(Route.decodeCreate({ method, path, handler: "h" }), store.create)
      const routes = []
      for (let i = 0; i < RouteRepository.MAX_METHODS; i++) routes.push(yield* create(methodName(i), "/methods"))
      // A host's transaction writes a route of a stored method (the only route of it so far) and stays open.
      const written = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const writer = yield* sql.withTransaction(
        Effect.zipRight(
          create(methodName(0), "/pinned"),
          Effect.zipRight(Deferred.succeed(written, undefined), Deferred.await(release))
        )
      ).pipe(Effect.fork)
      yield* Deferred.await(written)
      // Whatever happens below, the writer ends, so its locks do not outlive the test (its table is dropped after).
      yield* Effect.addFinalizer(() => Deferred.succeed(release, undefined))
      const deletion = yield* Effect.fork(store.remove(routes[0]!.id))
      const waiting = Effect.map(
        sql<{ waiting: string }>`
          SELECT count(*) AS waiting FROM pg_stat_activity
          WHERE wait_event_type = 'Lock' AND strpos(query, ${table}) > 0`,
        (rows) => Number(rows[0]!.waiting)
      )
      yield* waiting.pipe(
        Effect.repeat({ until: (n) => n > 0, schedule: Schedule.spaced("10 millis").pipe(Schedule.upTo("5 seconds")) })
      )
      assert.strictEqual(yield* waiting, 1, "the delete waits for the write")
      // Every writer of the store waits for the write's transaction (it holds the revision counter, internal/pg/log.ts);
      // once it commits, the deleted route's method still counts: the write relies on it.
      const adding = yield* Effect.fork(Effect.flip(create("ONE-MORE", "/one-more")))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(writer)
      yield* Fiber.join(deletion)
      assert.strictEqual((yield* Fiber.join(adding))._tag, "TooManyMethods")
      const methods = yield* sql<{ n: string }>`SELECT count(DISTINCT method)::text AS n FROM ${sql(table)}`
      assert.strictEqual(methods[0]!.n, String(RouteRepository.MAX_METHODS))
      assert.strictEqual((yield* Effect.flip(create("ONE-MORE", "/one-more")))._tag, "TooManyMethods")
    }).pipe(
      Effect.scoped,
      Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))),
      Effect.provide(TestDatabase.layer())
    )
  })
})
