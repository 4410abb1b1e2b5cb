/**
 * Group commit (internal/pg/group.ts, docs/performance.md): the changes a process makes at the same time share one
 * transaction, each judged against the state the ones before it left, a refused one leaving the others, and revisions
 * follow the commit order across processes on one database.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Either, Layer } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Logged from "./utils/logged.js"
import { methodName } from "./utils/repositoryContract.js"
import * as TestDatabase from "./utils/TestDatabase.js"

const input = (path: string, method = "GET") =>
  Effect.orDie(Route.decodeCreate({ method, path, middleware: [], handler: "h" }))

const handler = (name: string) => ({ handler: name as Route.HandlerName })

/** A store on `table` over a pool of its own: another process's, as far as the database can tell. */
const processOn = (table: string) =>
  Effect.map(
    Layer.build(Layer.provide(PgRouteRepository.layer({ table }), TestDatabase.layer({ maxConnections: 4 }))),
    (context) => Context.get(context, RouteRepository.RouteRepository)
  )

/** How many transactions wrote `ids`' rows and removed `removed`: the id each row carries (migration 3). */
const transactionsOf = (table: string, ids: ReadonlyArray<string>, removed: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ count: number }>`SELECT count(DISTINCT txid)::int AS count FROM (
        SELECT txid FROM ${sql(table)} WHERE id = ANY(${ids}::uuid[])
        UNION ALL SELECT txid FROM ${sql(`${table}_removals`)} WHERE id = ANY(${removed}::uuid[])) AS written`,
      (rows) => rows[0]!.count
    ))

layer(TestDatabase.layer(), { excludeTestServices: true })("PgRouteRepository's group commit", (it) => {
  it.effect("creates, updates, deletes and restores made at once share one transaction, each at its own revision", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      const made = yield* Effect.forEach([0, 1, 2, 3, 4, 5], (i) => Effect.flatMap(input(`/made/${i}`), repo.create))
      const restorable = made[5]!
      const renamed = yield* repo.update(restorable.id, handler("renamed"))
      const start = (yield* Logged.logAfter(0, 0)).revision
      const results = yield* Effect.all(
        [
          ...[0, 1, 2, 3].map((i) => Effect.flatMap(input(`/new/${i}`), repo.create)),
          repo.update(made[0]!.id, handler("u0")),
          repo.update(made[1]!.id, handler("u1")),
          repo.remove(made[2]!.id),
          repo.remove(made[3]!.id),
          Logged.restore(restorable.id, restorable.revision)
        ].map((write) => Effect.either(write as Effect.Effect<unknown, unknown>)),
        { concurrency: "unbounded" }
      )
      assert.isTrue(results.every(Either.isRight), `${results.map((result) => result._tag)}`)
      const created = results.slice(0, 4).map((result) => (result as Either.Right<never, Route.StoredRoute>).right)
      const written = [...created.map((route) => route.id), made[0]!.id, made[1]!.id, restorable.id]
      assert.strictEqual(yield* transactionsOf(table, written, [made[2]!.id, made[3]!.id]), 1)
      // Nine changes, nine revisions after the start, one log entry each, the counter at the last.
      const log = yield* Logged.logAfter(start, 100)
      assert.deepStrictEqual(
        log.entries.map((entry) => entry.revision),
        Array.from({ length: 9 }, (_, i) => start + i + 1)
      )
      assert.deepStrictEqual(
        log.entries.map((entry) => entry.action).sort(),
        ["create", "create", "create", "create", "delete", "delete", "restore", "update", "update"]
      )
      assert.strictEqual(log.revision, start + 9)
      assert.strictEqual((yield* repo.findById(restorable.id)).handler, "h")
      assert.notStrictEqual(renamed.revision, (yield* repo.findById(restorable.id)).revision)
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table })))
  })

  it.effect("of conflicting changes made at once exactly one wins, judged against the changes before it", () =>
    Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      const target = yield* Effect.flatMap(input("/target"), repo.create)
      const doomed = yield* Effect.flatMap(input("/doomed"), repo.create)
      const [creates, ifMatched, removals] = yield* Effect.all([
        Effect.all(
          Array.from({ length: 8 }, (_, i) => Effect.either(Effect.flatMap(input(`/same/:p${i}`), repo.create))),
          { concurrency: "unbounded" }
        ),
        Effect.all(
          Array.from(
            { length: 8 },
            (_, i) => Effect.either(repo.update(target.id, handler(`h${i}`), { ifMatch: [target.revision] }))
          ),
          { concurrency: "unbounded" }
        ),
        Effect.all(Array.from({ length: 8 }, () => Effect.either(repo.remove(doomed.id))), {
          concurrency: "unbounded"
        })
      ], { concurrency: "unbounded" })
      const winner = creates.filter(Either.isRight)
      assert.strictEqual(winner.length, 1)
      for (const lost of creates.filter(Either.isLeft)) {
        assert.strictEqual(lost.left._tag, "RouteConflict")
        assert.strictEqual((lost.left as RouteRepository.RouteConflict).conflictingRouteId, winner[0]!.right.id)
      }
      assert.strictEqual(ifMatched.filter(Either.isRight).length, 1)
      assert.deepStrictEqual([...new Set(ifMatched.filter(Either.isLeft).map((lost) => lost.left._tag))], [
        "PreconditionFailed"
      ])
      assert.strictEqual(removals.filter(Either.isRight).length, 1)
      assert.deepStrictEqual([...new Set(removals.filter(Either.isLeft).map((lost) => lost.left._tag))], [
        "RouteNotFound"
      ])
    }).pipe(Effect.provide(TestDatabase.storeLayer())))

  it.effect("creates of shapes already held, made at once, are each refused naming the holder, as a lone create is", () =>
    Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      const when = { host: "api.example.com", headers: [{ name: "x-tenant", value: "a" }] }
      const decode = (path: string, conditions?: typeof when) =>
        Effect.orDie(Route.decodeCreate({ method: "GET", path, middleware: [], handler: "h", when: conditions }))
      const plain = yield* Effect.flatMap(decode("/held/:id"), repo.create)
      const conditioned = yield* Effect.flatMap(decode("/held/:id", when), repo.create)
      // Held shapes and free ones mixed in one group: the free ones are created, each held one names its holder.
      const answers = yield* Effect.all(
        Array.from({ length: 12 }, (_, i) =>
          Effect.either(Effect.flatMap(
            i % 3 === 0 ? decode(`/held/:p${i}`) : i % 3 === 1 ? decode(`/held/:q${i}`, when) : decode(`/free/${i}`),
            repo.create
          ))),
        { concurrency: "unbounded" }
      )
      const lone = (conditions?: typeof when) =>
        Effect.flip(Effect.flatMap(decode("/held/:p0", conditions), repo.create))
      const [alone, aloneWith] = [yield* lone(), yield* lone(when)]
      answers.forEach((answer, i) => {
        if (i % 3 === 2) return assert.isTrue(Either.isRight(answer))
        assert.isTrue(Either.isLeft(answer))
        const conflict = Either.getLeft(answer).pipe((left) => left._tag === "Some" ? left.value : undefined)
        const expected = i % 3 === 0 ? alone : aloneWith
        assert.strictEqual(conflict?._tag, "RouteConflict")
        const refused = conflict as RouteRepository.RouteConflict
        assert.strictEqual(refused.conflictingRouteId, i % 3 === 0 ? plain.id : conditioned.id)
        assert.deepStrictEqual(refused.when, (expected as RouteRepository.RouteConflict).when)
        assert.strictEqual(refused.message.replace(/:[pq]\d+/, ":p0"), expected.message)
      })
    }).pipe(Effect.provide(TestDatabase.storeLayer())))

  it.effect("a change the database refuses leaves the others of its group, which commit together", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      // GET and these: one method short of the bound.
      for (let i = 0; i < RouteRepository.MAX_METHODS - 2; i++) {
        yield* Effect.flatMap(input("/methods", methodName(i)), repo.create)
      }
      const held = yield* Effect.flatMap(input("/held"), repo.create)
      const mover = yield* Effect.flatMap(input("/mover"), repo.create)
      const kept = yield* Effect.flatMap(input("/kept"), repo.create)
      const results = yield* Effect.all(
        [
          Effect.flatMap(input("/new/a"), repo.create),
          // The method bound refuses the second new method: an error of the database, in the creates' statement.
          Effect.flatMap(input("/one", "NEW-ONE"), repo.create),
          Effect.flatMap(input("/two", "NEW-TWO"), repo.create),
          // The unique index refuses this one.
          repo.update(mover.id, { path: "/held" as Route.RoutePath }),
          repo.update(kept.id, handler("changed")),
          Effect.flatMap(input("/new/b"), repo.create)
        ].map((write) => Effect.either(write as Effect.Effect<Route.StoredRoute, unknown>)),
        { concurrency: "unbounded" }
      )
      const tags = results.map((result) => Either.isRight(result) ? "ok" : (result.left as { _tag: string })._tag)
      assert.deepStrictEqual([tags[0], tags[3], tags[4], tags[5]], ["ok", "RouteConflict", "ok", "ok"])
      assert.deepStrictEqual([tags[1], tags[2]].sort(), ["TooManyMethods", "ok"])
      assert.strictEqual(
        (results[3]!.pipe(Either.flip, Either.getOrThrow) as RouteRepository.RouteConflict)
          .conflictingRouteId,
        held.id
      )
      const landed = results.flatMap((result) => Either.isRight(result) ? [result.right] : [])
      assert.strictEqual(yield* transactionsOf(table, landed.map((route) => route.id), []), 1)
      assert.deepStrictEqual(yield* repo.findById(mover.id), mover)
      const revisions = landed.map((route) => route.revision).sort((a, b) => a - b)
      const log = yield* Logged.logAfter(revisions[0]! - 1, 100)
      assert.deepStrictEqual(log.entries.map((entry) => entry.revision), revisions)
    }).pipe(Effect.provide(TestDatabase.storeLayer({ table })))
  })

  it.effect("after a group fails at its deadline the next are half its size, so a burst too large for it gets through", () => {
    const table = TestDatabase.freshTable()
    const burst = (repo: RouteRepository.RouteRepository["Type"], name: string) =>
      Effect.all(
        [0, 1, 2, 3, 4, 5, 6, 7].map((i) => Effect.either(Effect.flatMap(input(`/${name}/${i}`), repo.create))),
        { concurrency: "unbounded" }
      )
    return Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      const sql = yield* SqlClient.SqlClient
      // Another connection holds the table, so the first burst's one group waits past its deadline.
      const holder = yield* sql.reserve
      yield* holder.executeUnprepared(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`, [], undefined)
      const refused = yield* burst(repo, "refused")
      yield* holder.executeUnprepared("COMMIT", [], undefined)
      assert.deepStrictEqual(
        [...new Set(refused.map((result) => Either.isLeft(result) ? (result.left as { _tag: string })._tag : "ok"))],
        ["StoreUnavailable"]
      )
      // The next eight go in groups of four (the second twice as large again, but only four are left).
      const landed = (yield* burst(repo, "landed")).map(Either.getOrThrow)
      assert.strictEqual(yield* transactionsOf(table, landed.map((route) => route.id), []), 2)
      // And after groups that commit, eight go in one again.
      const together = (yield* burst(repo, "together")).map(Either.getOrThrow)
      assert.strictEqual(yield* transactionsOf(table, together.map((route) => route.id), []), 1)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestDatabase.storeLayer({ table, queryTimeout: Duration.millis(300) }))
    )
  })

  it.effect("two processes writing at once: revisions appear in commit order, none lost, none twice", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const one = yield* RouteRepository.RouteRepository
      const two = yield* processOn(table)
      const start = (yield* Logged.logAfter(0, 0)).revision
      const stock = yield* Effect.forEach([0, 1, 2, 3], (i) => Effect.flatMap(input(`/stock/${i}`), one.create))
      const base = start + stock.length
      let done = false
      // A reader that never sees a revision before every one below it has committed: each read is one snapshot.
      const seen: Array<number> = []
      const read = Effect.suspend(() =>
        Effect.flatMap(
          Logged.logAfter(seen.at(-1) ?? base, 1_000),
          (page) => Effect.sync(() => seen.push(...page.entries.map((entry) => entry.revision)))
        )
      )
      const reader = Effect.gen(function*() {
        while (!done) yield* Effect.zipRight(read, Effect.sleep("2 millis"))
        yield* read
      })
      const writer = (repo: RouteRepository.RouteRepository["Type"], name: string) => (caller: number) =>
        Effect.forEach([0, 1, 2], (i) =>
          i === 1
            ? repo.update(stock[caller % stock.length]!.id, handler(`${name}${caller}`))
            : Effect.flatMap(input(`/${name}/${caller}/${i}`), repo.create), { discard: true })
      const writers = Effect.all([
        Effect.forEach(Array.from({ length: 20 }, (_, i) => i), writer(one, "one"), { concurrency: "unbounded" }),
        Effect.forEach(Array.from({ length: 20 }, (_, i) => i), writer(two, "two"), { concurrency: "unbounded" })
      ], { concurrency: "unbounded", discard: true }).pipe(Effect.ensuring(Effect.sync(() => done = true)))
      yield* Effect.all([writers, reader], { concurrency: "unbounded", discard: true })
      assert.deepStrictEqual(seen, Array.from({ length: 120 }, (_, i) => base + i + 1))
    }).pipe(Effect.scoped, Effect.provide(TestDatabase.storeLayer({ table })))
  })
})
