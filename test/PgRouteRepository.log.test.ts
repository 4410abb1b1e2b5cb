/**
 * The change log across processes on one database (docs/history.md): revisions follow the commit order whatever order
 * transactions began in, a reader never sees a later revision before an earlier one, and a change and its entry are
 * never visible one without the other, even when the process writing them is killed.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Spawned from "./utils/spawned.js"
import * as TestDatabase from "./utils/TestDatabase.js"

const WRITER = fileURLToPath(new URL("./fixtures/log/writer.ts", import.meta.url))

// Resolves with the process's output once it has printed `text`; rejects when it exits before.
const printed = (run: Spawned.Run, text: string) =>
  new Promise<string>((resolve, reject) => {
    const check = () => {
      if (run.output().includes(text)) return resolve(run.output())
      if (run.child.exitCode !== null) return reject(new Error(`exited before "${text}":\n${run.output()}`))
      setTimeout(check, 20)
    }
    check()
  })

const input = (path: string) => Effect.orDie(Route.decodeCreate({ method: "GET", path, handler: "h" }))

// A store of its own pool (a process of its own, as far as the database can tell) on `table`.
const storeOn = (table: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(TestDatabase.layer({ maxConnections: 4 }))
    const sql = Layer.succeedContext(context)
    const store = yield* Effect.provide(PgRouteRepository.makeContext({ table }), sql)
    return {
      store: Context.get(store, RouteRepository.RouteRepository),
      log: Context.get(store, RouteRepository.ChangeLog),
      sql: yield* Effect.provide(SqlClient.SqlClient, sql)
    }
  })

const withTable = <A, E, R>(body: (table: string) => Effect.Effect<A, E, R>) => {
  const table = TestDatabase.freshTable()
  return Effect.scoped(Effect.gen(function*() {
    const { sql } = yield* storeOn(table)
    yield* Effect.addFinalizer(() =>
      Effect.orDie(
        PgRouteRepository.uninstall({ table }).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )
      )
    )
    yield* Effect.orDie(PgRouteRepository.migrate({ table }).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
    return yield* body(table)
  }))
}

describe("PgRouteRepository: the change log across processes", () => {
  it.live("a transaction that began first and commits last takes the larger revision", () =>
    withTable((table) =>
      Effect.gen(function*() {
        const a = yield* storeOn(table)
        const b = yield* storeOn(table)
        const begun = yield* Deferred.make<void>()
        const go = yield* Deferred.make<void>()
        const first = yield* a.sql.withTransaction(Effect.gen(function*() {
          yield* a.sql`SELECT 1`
          yield* Deferred.succeed(begun, undefined)
          yield* Deferred.await(go)
          return yield* Effect.flatMap(input("/began-first"), (route) => a.store.create(route))
        })).pipe(Effect.fork)
        yield* Deferred.await(begun)
        const second = yield* b.sql.withTransaction(
          Effect.flatMap(input("/began-second"), (route) => b.store.create(route))
        )
        yield* Deferred.succeed(go, undefined)
        const last = yield* Fiber.join(first)
        assert.isBelow(second.revision, last.revision)
        const page = yield* a.log.history({ limit: 10 })
        assert.deepStrictEqual(page.items.map((entry) => entry.routeId), [last.id, second.id])
      })
    ))

  it.live(
    "writers in several processes at once: revisions in commit order, each change with one entry",
    () =>
      withTable((table) =>
        Effect.gen(function*() {
          const { sql } = yield* storeOn(table)
          const dir = yield* Effect.promise(() => mkdtemp(join(tmpdir(), "route-registry-log-")))
          yield* Effect.addFinalizer(() => Effect.promise(() => rm(dir, { recursive: true, force: true })))
          const go = join(dir, "go")
          const writers = ["a", "b", "c"].map((prefix) =>
            Spawned.run(WRITER, { DATABASE_URL: TestDatabase.url, TABLE: table, ROUNDS: "6", PREFIX: prefix, GO: go })
          )
          yield* Effect.addFinalizer(() => Effect.sync(() => writers.forEach((writer) => writer.child.kill("SIGKILL"))))
          yield* Effect.promise(() => Promise.all(writers.map((writer) => printed(writer, "ready"))))
          // A reader on a connection of its own, while they write: what each read shows of the log must be all of
          // the final log up to its newest revision, so no change was visible before one with a smaller revision.
          const snapshots: Array<ReadonlyArray<number>> = []
          let writing = true
          const watch = yield* Effect.fork(Effect.gen(function*() {
            while (writing) {
              const rows = yield* sql<{ revision: string }>`
                SELECT revision FROM ${sql(`${table}_history`)} ORDER BY revision`
              snapshots.push(rows.map((row) => Number(row.revision)))
            }
          }))
          yield* Effect.promise(() => writeFile(go, ""))
          const outputs = yield* Effect.promise(() =>
            Promise.all(writers.map((writer) => printed(writer, "revisions ")))
          )
          writing = false
          yield* Fiber.join(watch)
          // Every change the writers were answered has exactly one entry, at its revision, and the log holds no other.
          const answered = outputs.flatMap((output) =>
            JSON.parse(/revisions (\[.*\])/.exec(output)![1]!) as Array<number>
          ).sort((x, y) => x - y)
          assert.strictEqual(answered.length, 3 * 6 * (6 * 2 + 2))
          assert.strictEqual(new Set(answered).size, answered.length)
          const logged = yield* sql<{ revision: string }>`
          SELECT revision FROM ${sql(`${table}_history`)} ORDER BY revision`
          assert.deepStrictEqual(logged.map((row) => Number(row.revision)), answered)
          const early = snapshots.filter((seen) =>
            seen.length > 0 && seen.join() !== answered.filter((revision) => revision <= seen.at(-1)!).join()
          )
          assert.deepStrictEqual(early, [])
          // The reader saw the log while it grew, not only before and after.
          assert.isAbove(snapshots.filter((seen) => seen.length > 0 && seen.length < answered.length).length, 0)
          // Written in the change's transaction: each stored row and the entry at its revision share it, as each
          // removal (stamped by the table's trigger) and the entry of the delete do.
          const [together] = yield* sql<{ rows: string; logged: string; deletes: string; removed: string }>`
            SELECT (SELECT count(*) FROM ${sql(table)}) AS rows,
              (SELECT count(*) FROM ${sql(table)} AS r JOIN ${sql(`${table}_history`)} AS h
                ON h.revision = r.revision AND h.xmin = r.xmin) AS logged,
              (SELECT count(*) FROM ${sql(`${table}_history`)} WHERE action = 'delete') AS deletes,
              (SELECT count(*) FROM ${sql(`${table}_history`)} AS h JOIN ${sql(`${table}_removals`)} AS d
                ON d.id = h.route_id AND d.txid::text::numeric % 4294967296 = h.xmin::text::numeric
                WHERE h.action = 'delete') AS removed`
          const [live, deleted] = [3 * 6 * 4, 3 * 6 * 2].map(String)
          assert.deepStrictEqual({ ...together }, { rows: live, logged: live, deletes: deleted, removed: deleted })
        })
      ),
    120_000
  )

  it.live("hosts of the earlier release inserting in between (a rolling upgrade): no revision is given twice", () =>
    withTable((table) =>
      Effect.gen(function*() {
        const { sql, store } = yield* storeOn(table)
        // What a host of the earlier release writes: a plain insert, its revision from the sequence (nextval).
        const insertAsEarlierRelease = (path: string, at: number) =>
          Effect.map(
            sql<{ revision: string }>`
              INSERT INTO ${sql(table)} (id, method, path, path_shape, middleware, handler, created_at)
              VALUES (${Route.makeRouteId(at)}, ${"GET"}, ${path}, ${Route.shapeOf(path as Route.RoutePath)},
                      ${[]}, ${"old"}, ${new Date(at)}) RETURNING revision`,
            (rows) => Number(rows[0]!.revision)
          )
        const revisions: Array<number> = []
        for (let i = 0; i < 3; i++) {
          revisions.push((yield* Effect.flatMap(input(`/new/${i}`), (route) => store.create(route))).revision)
          revisions.push(yield* insertAsEarlierRelease(`/old/${i}/a`, Date.UTC(2026, 0, 1, 0, i)))
          revisions.push(yield* insertAsEarlierRelease(`/old/${i}/b`, Date.UTC(2026, 0, 1, 1, i)))
          const { id } = yield* Effect.flatMap(input(`/updated/${i}`), (route) => store.create(route))
          revisions.push((yield* store.update(id, { handler: "h2" as Route.HandlerName })).revision)
        }
        // Every change, from either release, takes a revision above every one committed before it.
        const rows = yield* sql<{ revision: string }>`SELECT revision FROM ${sql(table)}`
        revisions.slice(1).forEach((revision, i) => assert.isAbove(revision, revisions[i]!, `change ${i + 1}`))
        assert.strictEqual(new Set(rows.map((row) => row.revision)).size, rows.length)
      })
    ))

  it.live(
    "a process killed mid-write: every route row has its entry, and every entry's route is as logged",
    () =>
      withTable((table) =>
        Effect.gen(function*() {
          const { sql } = yield* storeOn(table)
          const child = Spawned.run(WRITER, {
            DATABASE_URL: TestDatabase.url,
            TABLE: table
          })
          yield* Effect.promise(async () => {
            await printed(child, "writing")
            await new Promise((resolve) => setTimeout(resolve, 300))
            child.child.kill("SIGKILL")
            await child.exited
          })
          // The newest entry of each route against its row: a row is there exactly when the entry left it, as it left it.
          const mismatches = yield* sql<{ id: string }>`
          WITH newest AS (
            SELECT DISTINCT ON (route_id) route_id, revision, after FROM ${sql(`${table}_history`)}
            ORDER BY route_id, revision DESC
          )
          SELECT COALESCE(r.id, n.route_id)::text AS id FROM ${sql(table)} AS r
          FULL JOIN newest AS n ON n.route_id = r.id
          WHERE r.id IS NULL AND n.after IS NOT NULL
             OR n.route_id IS NULL
             OR r.id IS NOT NULL AND (n.revision <> r.revision OR n.after ->> 'handler' <> r.handler)`
          const counts = yield* sql<{ routes: string; entries: string }>`
          SELECT (SELECT count(*) FROM ${sql(table)}) AS routes, (SELECT count(*) FROM ${
            sql(`${table}_history`)
          }) AS entries`
          assert.isAbove(Number(counts[0]!.entries), 3, "the writer wrote before it was killed")
          assert.deepStrictEqual(mismatches, [])
          const actors = yield* sql<{ actor: string }>`SELECT DISTINCT actor FROM ${sql(`${table}_history`)}`
          assert.deepStrictEqual(actors.map((row) => row.actor), ["writer"])
        })
      ),
    60_000
  )
})
