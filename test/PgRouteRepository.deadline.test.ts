/**
 * docs/reliability.md, "A 503 means nothing was written": a store operation answered `StoreUnavailable` (503) left nothing behind, and every change answered
 * with success is stored. The routes table is locked (`LOCK TABLE … ACCESS EXCLUSIVE`, held by another session)
 * past a short `queryTimeout`, every kind of write is sent, the lock is released, and the table is read directly.
 */
import { PgClient } from "@effect/sql-pg"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Duration, Effect, Either, Exit, Layer, Redacted } from "effect"
import Pg from "pg"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { nodeListener, type Received } from "./utils/adapters.js"
import { ADMIN, patch, post, tokens } from "./utils/httpContract.js"
import * as TcpProxy from "./utils/tcpProxy.js"
import * as TestDatabase from "./utils/TestDatabase.js"

const DEADLINE = Duration.millis(300)

const input = (path: string, handler = "h") =>
  Route.decodeCreate({ method: "GET", path, handler, middleware: [] }).pipe(Effect.orDie)

/** Another session, holding `table` locked from `lock` until `release` (or the end of the scope). */
const lockHolder = (table: string) =>
  Effect.gen(function*() {
    const client = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const client = new Pg.Client({ connectionString: TestDatabase.url })
        await client.connect()
        return client
      }),
      (client) => Effect.promise(() => client.end())
    )
    return {
      lock: Effect.promise(() => client.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)),
      release: Effect.promise(() => client.query("COMMIT"))
    }
  })

interface Row {
  readonly id: string
  readonly path: string
  readonly handler: string
  readonly revision: string
}

const rowsOf = (table: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<Row>`SELECT id::text, path, handler, revision::text FROM ${sql(table)}`
  )

const isUnavailable = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && String(exit.cause).includes("StoreUnavailable")

/** One write of every kind, with what its answer must leave in the table once the lock is gone. */
interface Checked {
  readonly what: string
  readonly exit: Exit.Exit<unknown, unknown>
  /** Asserts the table agrees with the answer: unchanged after a 503, changed after a success. */
  readonly check: (rows: ReadonlyArray<Row>) => void
}

const createChecked = (what: string, path: string, exit: Exit.Exit<Route.StoredRoute, unknown>): Checked => ({
  what,
  exit,
  check: (rows) => {
    const stored = rows.filter((row) => row.path === path)
    if (Exit.isSuccess(exit)) assert.deepStrictEqual(stored.map((row) => row.id), [exit.value.id], `${what}: stored`)
    else assert.deepStrictEqual(stored, [], `${what} was answered ${Exit.isFailure(exit) && exit.cause}: no trace`)
  }
})

/**
 * Sends, while `table` may be locked: 20 creates at once (one batch), a create alone, 3 keyed creates, 3 updates and
 * 3 removals of routes made beforehand, all at the same moment.
 */
const writeAll = (repo: RouteRepository.RouteRepository["Type"], round: string) =>
  Effect.gen(function*() {
    const { createIdempotent } = yield* RouteRepository.Idempotent
    const patched = yield* Effect.forEach(
      [0, 1, 2],
      (i) => Effect.flatMap(input(`/${round}/patched/${i}`), repo.create)
    )
    const removed = yield* Effect.forEach(
      [0, 1, 2],
      (i) => Effect.flatMap(input(`/${round}/removed/${i}`), repo.create)
    )
    return Effect.gen(function*() {
      const batched = Array.from({ length: 20 }, (_, i) => `/${round}/batched/${i}`)
      const keyed = [0, 1, 2].map((i) => `/${round}/keyed/${i}`)
      const alone = `/${round}/alone`
      const createAlone = Effect.zipRight(
        Effect.sleep(Duration.millis(1)), // a turn of the event loop of its own: a batch of one
        Effect.exit(Effect.flatMap(input(alone), repo.create))
      )
      const [batchedExits, aloneExit, keyedExits, patchExits, removeExits] = yield* Effect.all([
        Effect.forEach(batched, (path) => Effect.exit(Effect.flatMap(input(path), repo.create)), {
          concurrency: "unbounded"
        }),
        createAlone,
        Effect.forEach(keyed, (path, i) =>
          Effect.exit(Effect.flatMap(input(path), (route) =>
            createIdempotent(route, {
              key: `${round}-key-${i}`,
              principal: "deadline-test",
              expiresAfter: Duration.hours(1),
              maxKeys: 1_000,
              maxBytes: 1024 * 1024
            }))), { concurrency: "unbounded" }),
        Effect.forEach(
          patched,
          (route) => Effect.exit(repo.update(route.id, { handler: "patched" as Route.HandlerName })),
          {
            concurrency: "unbounded"
          }
        ),
        Effect.forEach(removed, (route) => Effect.exit(repo.remove(route.id)), { concurrency: "unbounded" })
      ], { concurrency: "unbounded" })
      const checked: Array<Checked> = [
        ...batched.map((path, i) => createChecked(`batched create ${path}`, path, batchedExits[i]!)),
        createChecked(`create alone ${alone}`, alone, aloneExit),
        ...keyed.map((path, i) =>
          createChecked(
            `keyed create ${path}`,
            path,
            Exit.map(keyedExits[i]!, (remembered) => Either.getOrThrow(remembered.outcome))
          )
        ),
        ...patched.map((route, i): Checked => ({
          what: `update of ${route.path}`,
          exit: patchExits[i]!,
          check: (rows) => {
            const row = rows.find((row) => row.id === route.id)!
            const exit = patchExits[i]!
            if (Exit.isSuccess(exit)) {
              assert.deepStrictEqual([row.handler, row.revision], ["patched", String(exit.value.revision)], route.path)
            } else {
              assert.deepStrictEqual(
                [row.handler, row.revision],
                ["h", String(route.revision)],
                `${route.path}: no trace`
              )
            }
          }
        })),
        ...removed.map((route, i): Checked => ({
          what: `removal of ${route.path}`,
          exit: removeExits[i]!,
          check: (rows) => {
            const present = rows.some((row) => row.id === route.id)
            assert.strictEqual(present, Exit.isFailure(removeExits[i]!), `${route.path}: present iff not removed`)
          }
        }))
      ]
      return checked
    })
  })

layer(TestDatabase.layer(), { excludeTestServices: true })("PgRouteRepository past its deadline", (it) => {
  it.effect("a write refused StoreUnavailable on a locked table is never stored once the lock is gone", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      const holder = yield* lockHolder(table)
      const send = yield* writeAll(repo, "locked")
      yield* holder.lock
      const checked = yield* send
      for (const { exit, what } of checked) assert.isTrue(isUnavailable(exit), `${what}: ${exit}`)
      yield* holder.release
      // What a statement left waiting on the lock would do, it has had time to do.
      yield* Effect.sleep(Duration.millis(500))
      const rows = yield* rowsOf(table)
      for (const { check } of checked) check(rows)
    }).pipe(Effect.scoped, Effect.provide(TestDatabase.storeLayer({ table, queryTimeout: DEADLINE })))
  })

  it.effect("with the lock released around the deadline, every answer tells what the table holds", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const repo = yield* RouteRepository.RouteRepository
      const all: Array<Checked> = []
      // Released a little before, at, and a little after the deadline: writes complete on both sides of it.
      for (const [round, offset] of [-40, -20, -10, -5, 0, 5, 10, 20].entries()) {
        const holder = yield* lockHolder(table)
        const send = yield* writeAll(repo, `round${round}`)
        yield* holder.lock
        const release = Effect.delay(holder.release, Duration.millis(Duration.toMillis(DEADLINE) + offset))
        const [checked] = yield* Effect.all([send, release], { concurrency: "unbounded" })
        all.push(...checked)
      }
      yield* Effect.sleep(Duration.millis(500))
      const rows = yield* rowsOf(table)
      for (const { check } of all) check(rows)
    }).pipe(Effect.scoped, Effect.provide(TestDatabase.storeLayer({ table, queryTimeout: DEADLINE })))
  }, 60_000)
  it.effect("in a host's transaction, a write past the deadline leaves nothing in it, and the host's work goes on", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* RouteRepository.RouteRepository
      const hostTable = sql(`${table}_host`)
      yield* sql`CREATE TABLE ${hostTable} (step int)`
      yield* Effect.addFinalizer(() => Effect.orDie(sql`DROP TABLE ${hostTable}`))
      const patched = yield* Effect.flatMap(input("/host/patched"), repo.create)
      const removed = yield* Effect.flatMap(input("/host/removed"), repo.create)
      const holder = yield* lockHolder(table)
      yield* holder.lock
      const exits = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO ${hostTable} VALUES (1)`
        const exits = [
          yield* Effect.exit(Effect.flatMap(input("/host/created"), repo.create)),
          yield* Effect.exit(repo.update(patched.id, { handler: "patched" as Route.HandlerName })),
          yield* Effect.exit(repo.remove(removed.id))
        ]
        // The host's transaction is still usable, and the host commits it.
        yield* sql`INSERT INTO ${hostTable} VALUES (2)`
        return exits
      }))
      for (const exit of exits) assert.isTrue(isUnavailable(exit), String(exit))
      yield* holder.release
      yield* Effect.sleep(Duration.millis(300))
      assert.deepStrictEqual(yield* sql<{ step: number }>`SELECT step FROM ${hostTable} ORDER BY step`, [
        { step: 1 },
        { step: 2 }
      ])
      const rows = yield* rowsOf(table)
      assert.deepStrictEqual(rows.map((row) => `${row.path} ${row.handler}`).sort(), [
        "/host/patched h",
        "/host/removed h"
      ])
    }).pipe(Effect.scoped, Effect.provide(TestDatabase.storeLayer({ table, queryTimeout: DEADLINE })))
  })
})

layer(TestDatabase.layer(), { excludeTestServices: true })("PgRouteRepository reads past the deadline", (it) => {
  it.effect("are cancelled in the database, even when every pool connection is stuck on the lock", () => {
    const table = TestDatabase.freshTable()
    const application = `deadline-reads-${process.pid}`
    const client = PgClient.layer({
      url: Redacted.make(TestDatabase.url),
      maxConnections: 2,
      applicationName: application
    })
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const context = yield* Layer.build(
        TestDatabase.storeLayer({ table, queryTimeout: DEADLINE }).pipe(Layer.provide(client))
      )
      const repo = Context.get(context, RouteRepository.RouteRepository)
      const route = yield* Effect.flatMap(input("/read"), repo.create)
      const holder = yield* lockHolder(table)
      yield* holder.lock
      // Three times as many reads as the pool has connections, all waiting on the lock or for a connection.
      const exits = yield* Effect.all(
        Array.from(
          { length: 6 },
          (_, i): Effect.Effect<Exit.Exit<unknown, unknown>> =>
            Effect.exit<unknown, unknown, never>(
              i % 2 === 0 ? repo.findById(route.id) : repo.list({ limit: 10, handler: `h${i}` })
            )
        ),
        { concurrency: "unbounded" }
      )
      for (const exit of exits) assert.isTrue(isUnavailable(exit), String(exit))
      // The lock is still held: no statement of the store may wait on it for ever.
      const waiting = sql<{ n: number }>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${application} AND state = 'active'`
      const deadline = Date.now() + 5_000
      let left = (yield* waiting)[0]!.n
      while (left > 0 && Date.now() < deadline) {
        yield* Effect.sleep(Duration.millis(50))
        left = (yield* waiting)[0]!.n
      }
      assert.strictEqual(left, 0, "statements of the store still waiting on the lock")
      yield* holder.release
      assert.strictEqual((yield* repo.findById(route.id)).id, route.id)
    }).pipe(Effect.scoped)
  })
})

/** The store over a client whose connections pass through `proxy`, and the direct client beside it. */
const throughProxy = (table: string, maxConnections = 4) =>
  Effect.gen(function*() {
    const proxy = yield* Effect.acquireRelease(
      Effect.promise(() => TcpProxy.start(TestDatabase.url)),
      (proxy) => Effect.promise(() => proxy.close())
    )
    const client = PgClient.layer({ url: Redacted.make(proxy.url), maxConnections })
    const context = yield* Layer.build(
      TestDatabase.storeLayer({ table, queryTimeout: DEADLINE }).pipe(Layer.provide(client))
    )
    // Whatever is still held is let through before the store and its client are released.
    yield* Effect.addFinalizer(() => Effect.sync(proxy.release))
    return { proxy, repo: Context.get(context, RouteRepository.RouteRepository) }
  })

layer(TestDatabase.layer(), { excludeTestServices: true })("PgRouteRepository on a connection that hangs", (it) => {
  it.effect("a write whose statements do not reach the database is answered 503 and never stored", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const { proxy, repo } = yield* throughProxy(table)
      const before = yield* Effect.flatMap(input("/hung/before"), repo.create)
      proxy.hold({ direction: "to server" })
      const exits = yield* Effect.all([
        Effect.exit(Effect.flatMap(input("/hung/created"), repo.create)),
        Effect.exit(repo.update(before.id, { handler: "patched" as Route.HandlerName }))
      ], { concurrency: "unbounded" })
      for (const exit of exits) assert.isTrue(isUnavailable(exit), String(exit))
      proxy.release() // the held statements reach the database now
      yield* Effect.sleep(Duration.millis(500))
      const rows = yield* rowsOf(table)
      assert.deepStrictEqual(rows.map((row) => `${row.path} ${row.handler}`), ["/hung/before h"])
    }).pipe(Effect.scoped)
  })

  it.effect("a COMMIT whose answer is lost is answered as the database decided: stored", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const { proxy, repo } = yield* throughProxy(table)
      proxy.hold({ direction: "to client", after: "COMMIT\u0000" })
      const created = yield* Effect.flatMap(input("/lost-answer"), repo.create)
      const rows = yield* rowsOf(table)
      assert.deepStrictEqual(rows.map((row) => row.id), [created.id])
    }).pipe(Effect.scoped)
  })

  it.effect("batches whose COMMIT answers are lost are answered as the database decided: stored", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const { proxy, repo } = yield* throughProxy(table)
      const patched = yield* Effect.forEach([0, 1], (i) => Effect.flatMap(input(`/patched/${i}`), repo.create))
      proxy.hold({ direction: "to client", after: "COMMIT\u0000" })
      // Creates made at once share a transaction, as do updates: each is settled by the entries it wrote.
      const [created, updated] = yield* Effect.all([
        Effect.forEach([0, 1, 2], (i) => Effect.flatMap(input(`/batched/${i}`), repo.create), {
          concurrency: "unbounded"
        }),
        Effect.forEach(patched, (route) => repo.update(route.id, { handler: "patched" as Route.HandlerName }), {
          concurrency: "unbounded"
        })
      ], { concurrency: "unbounded" })
      const rows = yield* rowsOf(table)
      for (const route of [...created, ...updated]) {
        const row = rows.find((row) => row.id === route.id)
        assert.deepStrictEqual([row?.handler, row?.revision], [route.handler, String(route.revision)], route.path)
      }
    }).pipe(Effect.scoped)
  })

  // A ROLLBACK can be refused under load: the transaction's `SET LOCAL statement_timeout`, still in force, or a cancel
  // meant for an earlier statement lands on it (seen as `25P02 current transaction is aborted` on the next write that
  // took the connection). Here the server refuses it because the proxy spoils it.
  it.effect("a ROLLBACK the server refuses is sent again: the next write on the connection is not in a transaction", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const { proxy, repo } = yield* throughProxy(table, 1)
      const route = yield* Effect.flatMap(input("/rolled-back"), repo.create)
      yield* repo.remove(route.id)
      proxy.replaceOnce("ROLLBACK", "ROLLBACX")
      // Not found: its transaction is rolled back.
      const missing = yield* Effect.exit(repo.update(route.id, { handler: "patched" as Route.HandlerName }))
      assert.isTrue(Exit.isFailure(missing) && String(missing.cause).includes("RouteNotFound"), String(missing))
      const next = yield* Effect.exit(Effect.flatMap(input("/next"), repo.create))
      assert.isTrue(Exit.isSuccess(next), String(next))
      assert.deepStrictEqual((yield* rowsOf(table)).map((row) => row.path), ["/next"])
    }).pipe(Effect.scoped)
  })

  // A failover, a restart or a read-only server ends connections the pool holds idle; the pool may hand one out before
  // it hears so. Nothing of a write reached the server when its BEGIN fails on such a connection.
  it.effect("a write on a pooled connection its server ended goes on another one, once it is found lost at BEGIN", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const { proxy, repo } = yield* throughProxy(table, 1)
      yield* Effect.flatMap(input("/first"), repo.create)
      proxy.cutOnce("BEGIN") // the pool's one connection ends as the write below begins on it
      const next = yield* Effect.exit(Effect.flatMap(input("/second"), repo.create))
      assert.isTrue(Exit.isSuccess(next), String(next))
      assert.deepStrictEqual((yield* rowsOf(table)).map((row) => row.path).sort(), ["/first", "/second"])
    }).pipe(Effect.scoped)
  })

  it.effect("a COMMIT that never reaches the database is answered 503, and nothing is stored", () => {
    const table = TestDatabase.freshTable()
    return Effect.gen(function*() {
      const { proxy, repo } = yield* throughProxy(table)
      proxy.hold({ direction: "to server", after: "COMMIT\u0000" })
      const exit = yield* Effect.exit(Effect.flatMap(input("/lost-commit"), repo.create))
      assert.isTrue(isUnavailable(exit), String(exit))
      proxy.release()
      yield* Effect.sleep(Duration.millis(300))
      assert.deepStrictEqual(yield* rowsOf(table), [])
    }).pipe(Effect.scoped)
  })
})

describe("the HTTP API past the Postgres store's deadline", () => {
  layer(TestDatabase.layer(), { excludeTestServices: true })("", (it) => {
    it.effect("every 503 left no trace, every 2xx is stored", () => {
      const table = TestDatabase.freshTable()
      const store = TestDatabase.storeLayer({ table, queryTimeout: DEADLINE }).pipe(Layer.provide(TestDatabase.layer()))
      return Effect.gen(function*() {
        const served = yield* Effect.acquireRelease(
          Effect.promise(() => nodeListener.start(Layer.merge(store, tokens))),
          (served) => Effect.promise(() => served.close())
        )
        const send = (request: Parameters<typeof served.send>[0]) => Effect.promise(() => served.send(request))
        const body = (path: string) => ({ method: "GET", path, handler: "h" })
        const made: Array<Received> = []
        for (const path of ["/http/patched", "/http/removed"]) made.push(yield* send(post(body(path))))
        const [patched, removed] = made.map((answer) => answer.json.id as string)

        const holder = yield* lockHolder(table)
        yield* holder.lock
        const batched = Array.from({ length: 20 }, (_, i) => `/http/batched/${i}`)
        const keyed = ["/http/keyed/0", "/http/keyed/1"]
        const answers = yield* Effect.all([
          Effect.forEach(batched, (path) => send(post(body(path))), { concurrency: "unbounded" }),
          Effect.forEach(keyed, (path, i) =>
            send(post(body(path), {
              authorization: `Bearer ${ADMIN}`,
              "content-type": "application/json",
              "idempotency-key": `"http-key-${i}"`
            })), { concurrency: "unbounded" }),
          send(patch(patched!, { handler: "patched" })),
          send({ method: "DELETE", path: `/v1/routing/${removed}`, headers: { authorization: `Bearer ${ADMIN}` } })
        ], { concurrency: "unbounded" })
        const [creates, keyedCreates, patchAnswer, deleteAnswer] = answers
        for (const answer of [...creates, ...keyedCreates, patchAnswer, deleteAnswer]) {
          assert.strictEqual(answer.status, 503, answer.text)
          assert.strictEqual(answer.json.code, "store_unavailable")
        }
        yield* holder.release
        yield* Effect.sleep(Duration.millis(500))
        const rows = yield* rowsOf(table)
        assert.deepStrictEqual(rows.map((row) => row.path).sort(), ["/http/patched", "/http/removed"])
        assert.strictEqual(rows.find((row) => row.id === patched)!.handler, "h")

        // The same requests now succeed, and are stored.
        const later = yield* send(post(body(batched[0]!)))
        assert.strictEqual(later.status, 201, later.text)
        assert.strictEqual((yield* send(patch(patched!, { handler: "patched" }))).status, 200)
        assert.isTrue((yield* rowsOf(table)).some((row) => row.id === later.json.id))
      }).pipe(Effect.scoped)
    })
  })
})
