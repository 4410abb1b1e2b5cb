/**
 * The Postgres store's change feed and the route tables that follow it (docs/scaling-out.md, "Several processes on one database"), with separate clients (separate
 * pools, separate connections on the server) standing in for separate host processes. The tests with real child
 * processes, killed connections and a restarted server are in test/reliability/processes.test.ts.
 */
import { PgClient } from "@effect/sql-pg"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import { Chunk, Clock, Context, Deferred, Duration, Effect, Fiber, Layer, Logger, Schedule } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as Feed from "../src/internal/pg/feed.js"
import * as TestDatabase from "./utils/TestDatabase.js"
import { eventually } from "./utils/waiting.js"

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

/** The table's routes as `id@revision`, sorted, to compare with the store's rows. */
const contents = (table: RouteTable.Table<Route.StoredRoute>) =>
  Array.from(table, (route) => `${route.id}@${route.revision}`).sort()

const storedRows = (store: Store) =>
  Effect.map(store.list({ limit: 1000 }), (page) => page.items.map((route) => `${route.id}@${route.revision}`).sort())

/**
 * The pid of the one connection listening on `table`'s channel once there is one other than `killed`, within 10 s: its
 * last statement is its `LISTEN`, or a ping it sent itself (`NOTIFY`; the pool's connections send `pg_notify()`).
 */
const listenerOf = (table: string, killed?: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const deadline = Date.now() + 10_000
    for (;;) {
      const rows = yield* sql<{ pid: number }>`
        SELECT pid FROM pg_stat_activity
        WHERE (query = ${`LISTEN "${table}_changes"`} OR starts_with(query, ${`NOTIFY "${table}_changes", `}))
          AND pid <> pg_backend_pid()`
      if (rows.length === 1 && rows[0]!.pid !== killed) return rows[0]!.pid
      if (Date.now() > deadline) return yield* Effect.die(new Error(`no new listener on ${table}: ${rows.length}`))
      yield* Effect.sleep(20)
    }
  })

layer(TestDatabase.layer(), { excludeTestServices: true })("the Postgres store's change feed", (it) => {
  it.effect("a transaction that took an older revision and commits later is still read (the out-of-order trap)", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* RouteRepository.RouteRepository
      const feed = yield* RouteRepository.Feed
      // The method is stored before the writers start: two writers both adding a method new to the registry are
      // decided one after the other (the method bound), and writer 2 would wait for writer 1 to commit.
      yield* Effect.flatMap(input("/stored"), store.create)
      const start = yield* feed.cursor

      // Writers through the store take their revisions under one lock, so they commit in revision order; hosts of an
      // earlier release during a rolling upgrade (plain inserts, revisions from the sequence) do not. Writer 1 takes
      // its revision first and holds its transaction open; writer 2 takes the next one and commits.
      const insertAsEarlierRelease = (path: string, at: number) =>
        Effect.map(
          sql<{ id: string; revision: string }>`
            INSERT INTO ${sql(table)} (id, method, path, path_shape, middleware, handler, created_at)
            VALUES (${Route.makeRouteId(at)}, ${"GET"}, ${path}, ${Route.shapeOf(path as Route.RoutePath)},
                    ${[]}, ${"old"}, ${new Date()})
            RETURNING id, revision`,
          (rows) => ({ id: rows[0]!.id, revision: Number(rows[0]!.revision) })
        )
      const written = yield* Deferred.make<{ id: string; revision: number }>()
      const release = yield* Deferred.make<void>()
      const slow = yield* sql.withTransaction(Effect.gen(function*() {
        const route = yield* insertAsEarlierRelease("/slow", Date.UTC(2026, 0, 1))
        yield* Deferred.succeed(written, route)
        yield* Deferred.await(release)
        return route
      })).pipe(Effect.fork)
      const older = yield* Deferred.await(written)
      const newer = yield* insertAsEarlierRelease("/fast", Date.UTC(2026, 0, 2))
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

  // Transaction ids are one server's since its start: a promoted standby gives again ids the old primary had given
  // (test/PgRouteRepository.failover.test.ts). A cursor of another server, or of an earlier release, reads nothing.
  it.effect("a cursor taken on another server, or before a restart, or by an earlier release, is lost", () =>
    Effect.gen(function*() {
      const feed = yield* RouteRepository.Feed
      const cursor = yield* feed.cursor
      const [server, snapshot] = cursor.split("@") as [string, string]
      assert.isTrue((yield* feed.since(cursor)).complete)
      for (const other of [`${server}0@${snapshot}`, snapshot]) {
        const read = yield* feed.since(other)
        assert.isFalse(read.complete, other)
        assert.isTrue((yield* feed.since(read.cursor)).complete, "the cursor it gives is this server's")
      }
    }).pipe(Effect.provide(TestDatabase.storeLayer())))

  it.effect("updates and removals, also those made with plain SQL, are read as the routes are now", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* RouteRepository.RouteRepository
      const feed = yield* RouteRepository.Feed
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
      const feed = yield* RouteRepository.Feed
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
      // A reader that started after the prune has lost nothing. Its snapshot's xmin is the oldest transaction running
      // anywhere in the database: while another test's transaction older than the removal runs, the feed cannot tell
      // whether the prune took a change that reader had not seen, and says so (a reload, never a loss).
      let fresh: RouteRepository.Changes | undefined
      yield* eventually("a reader that started after the prune has lost nothing", () => fresh?.complete === true).pipe(
        Effect.race(
          Effect.forever(
            Effect.tap(
              Effect.sleep(20),
              () =>
                Effect.flatMap(feed.cursor, (later) =>
                  Effect.map(feed.since(later), (changes) => {
                    fresh = changes
                  }))
            )
          )
        )
      )
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
                Effect.flatMap((route) =>
                  i % 3 === 0 ? (i % 2 === 0 ? storeB : storeA).remove(route.id) : Effect.succeed(0)
                )
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

    it.effect("rows of more than 64 segments (written before the limit) are left out of every table, and logged", () => {
      const table = TestDatabase.freshTable()
      const tooLong = "/s".repeat(65)
      return Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const lines: Array<string> = []
        const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => lines.push(String(message))))
        const a = yield* build(processTable(table)).pipe(Effect.provide(capture))
        const storeA = Context.get(a, RouteRepository.RouteRepository)
        const tableA = Context.get(a, RouteTable.RouteTable)
        const kept = yield* Effect.flatMap(input("/kept"), storeA.create)
        const legacy = yield* Effect.flatMap(input("/legacy"), storeA.create)
        // What an older version wrote, when paths had no segment limit (a change takes the next revision).
        yield* sql`UPDATE ${sql(table)} SET path = ${tooLong}, path_shape = ${tooLong},
          revision = nextval(${`${table}_revision_seq`}) WHERE id = ${legacy.id}`

        // A process following the change drops the route's older version: the table never serves what is gone.
        yield* eventually("A drops the route it cannot hold", () => RouteTable.get(tableA, legacy.id) === undefined)
        assert.strictEqual(RouteTable.lookup(tableA, "GET", "/legacy")._tag, "NotFound")
        // A process starting now loads every other row.
        const b = yield* build(processTable(table)).pipe(Effect.provide(capture))
        const tableB = Context.get(b, RouteTable.RouteTable)
        assert.deepStrictEqual(Array.from(tableB, (route) => route.id), [kept.id])
        assert.strictEqual(Context.get(b, RouteTable.TableStatus).unsafeGet().reachable, true)
        yield* eventually("both logged the row", () => lines.filter((line) => line.includes(legacy.id)).length >= 2)
        assert.isTrue(
          lines.every((line) => line.includes("has 65 segments, more than the 64 allowed")),
          lines.join("\n")
        )
      }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
    })

    it.effect("a process that cannot read the store keeps routing, says how stale it is, and catches up", () => {
      const table = TestDatabase.freshTable()
      return Effect.gen(function*() {
        let away = false
        // Process B's store fails every read of the feed while `away`: its database is out of reach.
        const cutOff = Layer.effect(
          RouteRepository.Feed,
          Effect.map(RouteRepository.Feed, (feed): RouteRepository.ChangeFeed => ({
            ...feed,
            since: (cursor) =>
              away
                ? Effect.fail(new RouteRepository.StoreUnavailable({ reason: "cut off by the test" }))
                : feed.since(cursor),
            // What is announced while away is lost, as it is when the connection is down.
            listen: (listener) =>
              feed.listen!({
                apply: (upserted, removed) => away ? undefined : listener.apply(upserted, removed),
                wake: listener.wake
              })
          }))
        ).pipe(Layer.provideMerge(processStore(table, { pollInterval: "20 millis", changeRetention: "0 millis" })))
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
        const back = yield* Clock.currentTimeMillis
        yield* eventually(
          "B catches up and says so",
          // The table is current a step before the read that made it so has ended, which the status then reports.
          () =>
            RouteTable.get(tableB, during.id) !== undefined && RouteTable.get(tableB, doomed.id) === undefined &&
            statusB.unsafeGet().reachable
        )
        assert.deepStrictEqual(contents(tableB), yield* storedRows(storeA))
        assert.isDefined(RouteTable.get(tableB, before.id))
        // Confirmed current since the store came back: however long the catching up took on a loaded machine.
        assert.isAtMost(statusB.unsafeGet().stalenessMillis, (yield* Clock.currentTimeMillis) - back)
      }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
    })

    it.effect("a killed listening connection is replaced, and changes keep coming", () => {
      const table = TestDatabase.freshTable()
      return Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const options = { pollInterval: "100 millis" } as const
        const a = yield* build(processStore(table, options))
        const b = yield* build(processTable(table, options))
        const killed = yield* listenerOf(table)
        yield* sql`SELECT pg_terminate_backend(${killed})`
        yield* listenerOf(table, killed)
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

    it.effect("right after its listening connection is killed, a table hears the next change long before a poll", () => {
      const table = TestDatabase.freshTable()
      return Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Polls 30 s apart; a listener that died silently would be found out by its pings after 3 s at the earliest.
        const options = { pollInterval: "30 seconds" } as const
        const a = yield* build(processStore(table, options))
        const b = yield* build(processTable(table, options))
        const tableB = Context.get(b, RouteTable.RouteTable)
        let listening = yield* listenerOf(table)
        for (let round = 0; round < 3; round++) {
          yield* sql`SELECT pg_terminate_backend(${listening})`
          const created = yield* Effect.flatMap(
            input(`/after-kill/${round}`),
            Context.get(a, RouteRepository.RouteRepository).create
          )
          yield* eventually(
            `B routes the change made right after the kill (round ${round})`,
            () => RouteTable.get(tableB, created.id) !== undefined,
            2_000
          )
          listening = yield* listenerOf(table, listening)
        }
      }).pipe(Effect.scoped, Effect.ensuring(Effect.orDie(PgRouteRepository.uninstall({ table }))))
    })

    it.effect("where the client's config does not reach its database, the table listens through PgClient.listen", () => {
      const table = TestDatabase.freshTable()
      // A PgClient whose config names a port nothing listens on, as a pool's config may not say how it connects.
      const misleading = Layer.effectContext(Effect.gen(function*() {
        const pg = yield* PgClient.PgClient
        const config = { ...pg.config, url: undefined, host: "127.0.0.1", port: 1 }
        return Context.make(PgClient.PgClient, { ...pg, config } as PgClient.PgClient).pipe(
          Context.add(SqlClient.SqlClient, yield* SqlClient.SqlClient)
        )
      })).pipe(Layer.provide(TestDatabase.layer()))
      const options = { table, pollInterval: "1 hour" } as const
      return Effect.gen(function*() {
        const a = yield* build(processStore(table, options))
        const b = yield* build(
          RouteTable.layer.pipe(Layer.provide(PgRouteRepository.layer(options)), Layer.provide(misleading))
        )
        const created = yield* Effect.flatMap(
          input("/through-listen"),
          Context.get(a, RouteRepository.RouteRepository).create
        )
        yield* eventually(
          "B hears A's create",
          () => RouteTable.get(Context.get(b, RouteTable.RouteTable), created.id) !== undefined,
          10_000
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

describe("listening again after sessions that failed in a row", () => {
  const pausesOf = Effect.map(
    Schedule.run(Schedule.delays(Feed.relisten(1_000)), 0, Array.from({ length: 12 }, () => undefined)),
    (delays) => Chunk.toReadonlyArray(delays).map(Duration.toMillis)
  )

  it.effect("waits twice as long each time from 10 ms, within ±20%, never longer than the period", () =>
    Effect.gen(function*() {
      const pauses = yield* pausesOf
      pauses.forEach((pause, i) => {
        const bound = 10 * 2 ** i
        assert.isAtLeast(pause, Math.min(1_000, 0.8 * bound), `pause ${i}: ${pauses.join(", ")}`)
        assert.isAtMost(pause, Math.min(1_000, 1.2 * bound), `pause ${i}: ${pauses.join(", ")}`)
      })
      assert.strictEqual(pauses[11], 1_000, "capped at the period")
      const again = yield* pausesOf
      assert.notDeepEqual(again.slice(0, 6), pauses.slice(0, 6), "each pause drawn anew")
    }))
})
