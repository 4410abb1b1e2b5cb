/**
 * The Postgres store's change feed and the route tables that follow it (CONTRACT §12), with separate clients (separate
 * pools, separate connections on the server) standing in for separate host processes. The tests with real child
 * processes, killed connections and a restarted server are in test/reliability/processes.test.ts.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as TestDatabase from "./utils/TestDatabase.js"

type Store = RouteRepository.RouteRepository["Type"]

const input = (path: string, handler = "h") =>
  Route.decodeCreate({ method: "GET", path, handler, middleware: [] }).pipe(Effect.orDie)

/** A store on `table` over a client of its own: what one host process has. */
const processStore = (table: string, options: PgRouteRepository.Options = {}) =>
  PgRouteRepository.layer({ table, ...options }).pipe(Layer.provide(TestDatabase.layer()))

/** The route table and store one host process has, over a client of its own. */
const processTable = (table: string, options: PgRouteRepository.Options = {}) =>
  RouteTable.layer.pipe(Layer.provide(processStore(table, options)))

const build = <A, E>(layer: Layer.Layer<A, E>) => Effect.orDie(Layer.build(layer))

/** Waits (in real time) until `check` holds, failing with `what` after `millis`. */
const eventually = (what: string, check: () => boolean, millis = 5_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + millis
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`not within ${millis} ms: ${what}`))
      yield* Effect.sleep(5)
    }
  })

const feedOf = (store: Store) => {
  assert.isDefined(store.changes, "the Postgres store offers a change feed")
  return store.changes!
}

/** The table's routes as `id@revision`, sorted, to compare with the store's rows. */
const contents = (table: RouteTable.Table<Route.StoredRoute>) =>
  Array.from(table, (route) => `${route.id}@${route.revision}`).sort()

const storedRows = (store: Store) =>
  Effect.map(store.list({ limit: 1000 }), (page) => page.items.map((route) => `${route.id}@${route.revision}`).sort())

layer(TestDatabase.layer(), { excludeTestServices: true })("the Postgres store's change feed", (it) => {
  it.effect("a transaction that took an older revision and commits later is still read (the out-of-order trap)", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* RouteRepository.RouteRepository
      const feed = feedOf(store)
      const start = yield* feed.cursor

      // Writer 1 takes its revision first and holds its transaction open; writer 2 takes the next one and commits.
      const written = yield* Deferred.make<Route.StoredRoute>()
      const release = yield* Deferred.make<void>()
      const slow = yield* sql.withTransaction(Effect.gen(function*() {
        const route = yield* Effect.flatMap(input("/slow"), store.create)
        yield* Deferred.succeed(written, route)
        yield* Deferred.await(release)
        return route
      })).pipe(Effect.fork)
      const older = yield* Deferred.await(written)
      const newer = yield* Effect.flatMap(input("/fast"), store.create)
      assert.isBelow(older.revision, newer.revision, "the trap: the uncommitted write holds the older revision")

      const first = yield* feed.since(start)
      assert.deepStrictEqual(first.upserted.map((route) => route.id), [newer.id])

      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(slow)
      const second = yield* feed.since(first.cursor)
      // A reader that kept only the highest revision it saw (newer's) would never read this one.
      assert.deepStrictEqual(second.upserted.map((route) => route.id), [older.id])
      assert.isTrue(second.complete)
      const third = yield* feed.since(second.cursor)
      assert.deepStrictEqual([third.upserted.length, third.removed.length], [0, 0], "nothing is read twice")
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table })))
  })

  it.effect("updates and removals, also those made with plain SQL, are read as the routes are now", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* RouteRepository.RouteRepository
      const feed = feedOf(store)
      const kept = yield* Effect.flatMap(input("/kept"), store.create)
      const gone = yield* Effect.flatMap(input("/gone"), store.create)
      const start = yield* feed.cursor

      const updated = yield* store.update(kept.id, { handler: "changed" as Route.HandlerName })
      yield* store.update(kept.id, { handler: "changed again" as Route.HandlerName })
      yield* store.remove(gone.id)
      const created = yield* Effect.flatMap(input("/created-then-removed"), store.create)
      yield* store.remove(created.id)
      // An operator's SQL, outside the library: the triggers stamp it all the same.
      yield* sql`UPDATE ${sql(table)} SET handler = 'by-sql' WHERE id = ${kept.id}`

      const read = yield* feed.since(start)
      assert.deepStrictEqual(read.upserted.map((route) => [route.id, route.handler]), [[kept.id, "by-sql"]])
      assert.isAtLeast(read.upserted[0]!.revision, updated.revision)
      assert.deepStrictEqual([...read.removed].sort(), [gone.id, created.id].sort())

      yield* sql`DELETE FROM ${sql(table)} WHERE id = ${kept.id}`
      assert.deepStrictEqual((yield* feed.since(read.cursor)).removed, [kept.id])
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table })))
  })

  it.effect("a reader whose history was pruned is told to load every route again", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const store = yield* RouteRepository.RouteRepository
      const feed = feedOf(store)
      const start = yield* feed.cursor
      const route = yield* Effect.flatMap(input("/pruned"), store.create)
      // With no retention, the removal's own prune (run after it, in the background) forgets it at once.
      yield* store.remove(route.id)
      let read: RouteRepository.Changes | undefined
      yield* eventually("the reader is told its history is gone", () => read?.complete === false, 5_000).pipe(
        Effect.race(Effect.forever(Effect.tap(Effect.sleep(20), () =>
          Effect.map(feed.since(start), (changes) => {
            read = changes
          }))))
      )
      assert.deepStrictEqual([read!.upserted.length, read!.removed.length], [0, 0])
      // A reader that started after the prune has lost nothing.
      const later = yield* feed.cursor
      assert.isTrue((yield* feed.since(later)).complete)
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table, changeRetention: "0 millis" })))
  })
})

layer(TestDatabase.layer(), { excludeTestServices: true })(
  "route tables of several processes on one database",
  (it) => {
    it.effect("a change committed by one process is in every other process's table; none is lost", () => {
      const table = TestDatabase.freshTable()
      return Effect.gen(function*() {
        const a = yield* build(processTable(table))
        const b = yield* build(processTable(table))
        const storeA = Context.get(a, RouteRepository.RouteRepository)
        const storeB = Context.get(b, RouteRepository.RouteRepository)
        const tableA = Context.get(a, RouteTable.RouteTable)
        const tableB = Context.get(b, RouteTable.RouteTable)

        const created = yield* Effect.flatMap(input("/users/:id"), storeA.create)
        yield* eventually("B routes A's create", () => RouteTable.get(tableB, created.id) !== undefined)
        const found = RouteTable.lookup(tableB, "GET", "/users/42")
        assert.strictEqual(found._tag === "Found" && found.route.id, created.id)

        const updated = yield* storeB.update(created.id, { path: "/people/:id" as Route.RoutePath })
        yield* eventually(
          "A routes B's update",
          () => RouteTable.get(tableA, created.id)?.revision === updated.revision
        )
        assert.strictEqual(RouteTable.lookup(tableA, "GET", "/users/42")._tag, "NotFound")

        yield* storeA.remove(created.id)
        yield* eventually("B stops routing A's removal", () => RouteTable.get(tableB, created.id) === undefined)

        // Many changes from both at once: both tables end equal to the rows.
        yield* Effect.all(
          Array.from(
            { length: 40 },
            (_, i) =>
              Effect.flatMap(input(`/burst/${i}`), (route) => (i % 2 === 0 ? storeA : storeB).create(route)).pipe(
                Effect.flatMap((route) => i % 3 === 0 ? (i % 2 === 0 ? storeB : storeA).remove(route.id) : Effect.void)
              )
          ),
          { concurrency: 8 }
        )
        const rows = yield* storedRows(storeA)
        yield* eventually(
          "both tables equal the rows",
          () =>
            JSON.stringify(contents(tableA)) === JSON.stringify(rows) &&
            JSON.stringify(contents(tableB)) === JSON.stringify(rows)
        )
        assert.strictEqual(rows.length, 40 - 14)
        const status = Context.get(b, RouteTable.TableStatus).unsafeGet()
        assert.strictEqual(status.following, "notifications")
        assert.isTrue(status.reachable)
      }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
    })

    it.effect("without notifications, tables follow by polling", () => {
      const table = TestDatabase.freshTable()
      const options = { notifications: false, pollInterval: "50 millis" } as const
      return Effect.gen(function*() {
        const a = yield* build(processTable(table, options))
        const b = yield* build(processTable(table, options))
        const created = yield* Effect.flatMap(input("/polled"), Context.get(a, RouteRepository.RouteRepository).create)
        const tableB = Context.get(b, RouteTable.RouteTable)
        yield* eventually("B polls A's create", () => RouteTable.get(tableB, created.id) !== undefined)
        assert.strictEqual(Context.get(b, RouteTable.TableStatus).unsafeGet().following, "polling")
      }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
    })

    it.effect("a process that cannot read the store keeps routing, says how stale it is, and catches up", () => {
      const table = TestDatabase.freshTable()
      return Effect.gen(function*() {
        let away = false
        // Process B's store fails every read of the feed while `away`: its database is out of reach.
        const cutOff = Layer.effect(
          RouteRepository.RouteRepository,
          Effect.map(RouteRepository.RouteRepository, (store): Store => ({
            ...store,
            changes: {
              ...feedOf(store),
              since: (cursor) =>
                away
                  ? Effect.fail(new RouteRepository.StoreUnavailable({ reason: "cut off by the test" }))
                  : feedOf(store).since(cursor),
              // What is announced while away is lost, as it is when the connection is down.
              listen: (listener) =>
                feedOf(store).listen!({
                  apply: (upserted, removed) => away ? undefined : listener.apply(upserted, removed),
                  wake: listener.wake
                })
            }
          }))
        ).pipe(Layer.provide(processStore(table, { pollInterval: "20 millis", changeRetention: "0 millis" })))
        const a = yield* build(processStore(table, { changeRetention: "0 millis" }))
        const storeA = Context.get(a, RouteRepository.RouteRepository)
        const before = yield* Effect.flatMap(input("/before"), storeA.create)
        const doomed = yield* Effect.flatMap(input("/doomed"), storeA.create)

        const b = yield* build(RouteTable.layer.pipe(Layer.provide(cutOff)))
        const tableB = Context.get(b, RouteTable.RouteTable)
        const statusB = Context.get(b, RouteTable.TableStatus)
        assert.deepStrictEqual(contents(tableB), yield* storedRows(storeA), "loaded before the layer is built")

        away = true
        yield* eventually("B reports the outage", () => !statusB.unsafeGet().reachable)
        const during = yield* Effect.flatMap(input("/during"), storeA.create)
        // Removed while B is away, and its history pruned: B can only learn it by loading every route again.
        yield* storeA.remove(doomed.id)
        yield* Effect.sleep(200)
        const stale = statusB.unsafeGet()
        assert.isAbove(stale.stalenessMillis, 150)
        assert.strictEqual(stale.error, "cut off by the test")
        assert.strictEqual(RouteTable.lookup(tableB, "GET", "/before")._tag, "Found", "B keeps routing")
        assert.isDefined(RouteTable.get(tableB, doomed.id))

        away = false
        yield* eventually(
          "B catches up",
          () => RouteTable.get(tableB, during.id) !== undefined && RouteTable.get(tableB, doomed.id) === undefined
        )
        assert.deepStrictEqual(contents(tableB), yield* storedRows(storeA))
        assert.isDefined(RouteTable.get(tableB, before.id))
        const current = statusB.unsafeGet()
        assert.isTrue(current.reachable)
        assert.isBelow(current.stalenessMillis, 1_000)
      }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
    })

    it.effect("a killed listening connection is replaced, and changes keep coming", (ctx) => {
      TestDatabase.requireServer(ctx, "killing a backend needs a PostgreSQL server")
      const table = TestDatabase.freshTable()
      return Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const options = { pollInterval: "100 millis" } as const
        const a = yield* build(processStore(table, options))
        const b = yield* build(processTable(table, options))
        const listeners = sql<{ pid: number }>`
        SELECT pid FROM pg_stat_activity WHERE query = ${`LISTEN "${table}_changes"`} AND pid <> pg_backend_pid()`
        let pids: ReadonlyArray<number> = []
        const refresh = Effect.map(listeners, (rows) => {
          pids = rows.map((row) => row.pid)
        })
        yield* eventually("B listens", () => pids.length === 1).pipe(
          Effect.race(Effect.forever(Effect.zipRight(refresh, Effect.sleep(20))))
        )
        const killed = pids[0]!
        yield* sql`SELECT pg_terminate_backend(${killed})`
        yield* eventually("B listens on a new connection", () => pids.length === 1 && pids[0] !== killed, 10_000).pipe(
          Effect.race(Effect.forever(Effect.zipRight(refresh, Effect.sleep(20))))
        )
        const created = yield* Effect.flatMap(
          input("/after-kill"),
          Context.get(a, RouteRepository.RouteRepository).create
        )
        yield* eventually(
          "B routes a change made after",
          () => RouteTable.get(Context.get(b, RouteTable.RouteTable), created.id) !== undefined
        )
      }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
    })

    it.effect("an announced change is in the other tables before any poll; one made in a transaction once committed", () => {
      const table = TestDatabase.freshTable()
      // Polls an hour apart: only notifications can bring a change within the test.
      const options = { pollInterval: "1 hour" } as const
      return Effect.gen(function*() {
        const a = yield* build(processTable(table, options))
        const b = yield* build(processTable(table, options))
        const storeA = Context.get(a, RouteRepository.RouteRepository)
        const tableB = Context.get(b, RouteTable.RouteTable)
        const created = yield* Effect.flatMap(input("/announced"), storeA.create)
        yield* eventually("B has A's create", () => RouteTable.get(tableB, created.id)?.revision === created.revision)
        yield* storeA.remove(created.id)
        yield* eventually("B has A's removal", () => RouteTable.get(tableB, created.id) === undefined)

        const sql = yield* SqlClient.SqlClient
        const release = yield* Deferred.make<void>()
        const written = yield* Deferred.make<Route.StoredRoute>()
        const transaction = yield* sql.withTransaction(Effect.gen(function*() {
          const route = yield* Effect.flatMap(input("/in-transaction"), storeA.create)
          yield* Deferred.succeed(written, route)
          yield* Deferred.await(release)
        })).pipe(Effect.fork)
        const pending = yield* Deferred.await(written)
        yield* Effect.sleep(100)
        assert.isUndefined(RouteTable.get(tableB, pending.id), "not routed before its transaction commits")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(transaction)
        yield* eventually("B has it once committed", () => RouteTable.get(tableB, pending.id) !== undefined)
      }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
    })
  }
)
