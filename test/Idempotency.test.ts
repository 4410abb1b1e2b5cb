/**
 * Idempotent creates (`Idempotency-Key` on POST /v1/routing): the header's forms, then every rule over every adapter
 * and both stores, then what only the Postgres store can show: several processes sharing one database, and a key
 * written in the same transaction as its route.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Clock, Context, Deferred, Duration, Effect, Either, Fiber, Layer, Option, Schedule } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import * as Idempotency from "../src/internal/http/idempotency.js"
import { adapters, nodeListener, type Received, type Sent } from "./utils/adapters.js"
import { ADMIN, assertProblem, get, post, type Store, tokens, WRITER } from "./utils/httpContract.js"
import { stores } from "./utils/stores.js"
import * as TestDatabase from "./utils/TestDatabase.js"

type Service = Context.Tag.Service<RouteRepository.Idempotent>

const KEY = "\"8e03978e-40d5-43e8-bc93-6894a57f9324\""
const route = { method: "GET", path: "/users/:id", middleware: [], handler: "show" }
const other = { method: "GET", path: "/teams/:id", handler: "team" }

const headers = (token: string, key?: string): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  "content-type": "application/json",
  ...(key === undefined ? {} : { "idempotency-key": key })
})

const keyed = (body: unknown, key = KEY, token = ADMIN): Sent => post(body, headers(token, key))

const replayed = (response: Received) => response.headers.get(Idempotency.REPLAYED_HEADER)

/** The store in `store`, changed by `wrap`. */
// The store with its idempotent creates (`RouteRepository.Idempotent`) wrapped.
const wrapped = (store: Store, wrap: (service: Service) => Service): Store =>
  Layer.map(
    store,
    (context) =>
      Context.add(context, RouteRepository.Idempotent, wrap(Context.unsafeGet(context, RouteRepository.Idempotent)))
  )

// The idempotent creates of the store a layer built.
const remembering = <S>(context: Context.Context<S>) => {
  const idempotent = Context.getOption(context, RouteRepository.Idempotent)
  assert.isTrue(Option.isSome(idempotent), "the store remembers idempotency keys")
  return Option.getOrThrow(idempotent).createIdempotent
}

/** A clock `offset.millis` ahead of the real one. */
const shiftedClock = (offset: { millis: number }): Clock.Clock => {
  const real = Clock.make()
  const millis = () => real.unsafeCurrentTimeMillis() + offset.millis
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: millis,
    currentTimeMillis: Effect.sync(millis),
    unsafeCurrentTimeNanos: () => BigInt(millis()) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(millis()) * 1_000_000n),
    sleep: (duration) => real.sleep(duration)
  }
}

/** Every route the store holds, through the API. */
const routes = async (send: (request: Sent) => Promise<Received>) =>
  (await send({ method: "GET", path: "/v1/routing", headers: { authorization: `Bearer ${ADMIN}` } })).json.items

describe("the Idempotency-Key header", () => {
  it("is a Structured Field string, or a bare token meaning the same key", () => {
    assert.deepStrictEqual(Idempotency.parse(KEY), Either.right("8e03978e-40d5-43e8-bc93-6894a57f9324"))
    assert.deepStrictEqual(Idempotency.parse("8e03978e-40d5-43e8-bc93-6894a57f9324"), Idempotency.parse(KEY))
    assert.deepStrictEqual(Idempotency.parse(" \"a \\\"b\\\\ c\" "), Either.right("a \"b\\ c"))
    assert.deepStrictEqual(Idempotency.parse(`"${"k".repeat(255)}"`), Either.right("k".repeat(255)))
  })

  it("refuses every other form, saying why", () => {
    const refusals: Array<readonly [string, RegExp]> = [
      ["", /empty/],
      ["\"\"", /empty/],
      [`"${"k".repeat(256)}"`, /256 characters long, more than 255/],
      ["\"abc", /no closing quote/],
      ["\"a\", \"b\"", /text after the closing quote/],
      ["\"a\";p=1", /text after the closing quote/],
      ["\"caf\u00e9\"", /printable ASCII/],
      ["\"a\\b\"", /backslash/],
      ["two words", /neither a quoted string nor a token/]
    ]
    for (const [value, reason] of refusals) {
      const parsed = Idempotency.parse(value)
      assert.isTrue(Either.isLeft(parsed), value)
      if (Either.isLeft(parsed)) assert.match(parsed.left, reason, value)
    }
  })
})

for (const adapter of adapters) {
  for (const [storeName, store] of stores) {
    describe(`${adapter.name}, ${storeName}`, () => {
      const serve = async <A>(
        services: Store,
        test: (send: (request: Sent) => Promise<Received>) => Promise<A>,
        options?: RoutingHandler.Options
      ) => {
        const served = await adapter.start(Layer.merge(services, tokens), options)
        // Closed when `test` ends, not when the test does: a test may serve twice, the second time on a fresh store.
        try {
          return await test(served.send)
        } finally {
          await served.close()
        }
      }

      it("replays the first answer to the same key and the same route, whatever the body's layout", () =>
        serve(store, async (send) => {
          const first = await keyed(route)
          const created = await send(first)
          assert.strictEqual(created.status, 201, created.text)
          assert.isNull(replayed(created))
          // Another field order, whitespace, and middleware left out (which means []): the same route.
          const again = await send({
            ...first,
            body: "{ \"handler\" : \"show\", \"path\": \"/users/:id\",\n \"method\": \"GET\" }"
          })
          assert.strictEqual(again.status, 201)
          assert.strictEqual(replayed(again), "true")
          assert.strictEqual(again.text, created.text)
          for (const name of ["location", "etag", "content-type"]) {
            assert.strictEqual(again.headers.get(name), created.headers.get(name), name)
          }
          // The first answer, even once the route has changed since.
          const patched = await send({
            method: "PATCH",
            path: created.headers.get("location")!,
            headers: headers(ADMIN),
            body: JSON.stringify({ handler: "display" })
          })
          assert.strictEqual(patched.status, 200)
          const later = await send(keyed(route))
          assert.strictEqual(later.text, created.text)
          assert.strictEqual(later.headers.get("etag"), created.headers.get("etag"))
          assert.lengthOf(await routes(send), 1)
        }))

      it("answers 422 to the same key with another route, and creates nothing", () =>
        serve(store, async (send) => {
          assert.strictEqual((await send(keyed(route))).status, 201)
          const reused = await send(keyed(other))
          assertProblem(reused, "idempotency_key_reused")
          assert.match(reused.json.detail, /Idempotency-Key "8e03978e-40d5-43e8-bc93-6894a57f9324"/)
          assert.match(reused.json.detail, /new key/)
          assert.isNull(replayed(reused))
          assert.lengthOf(await routes(send), 1)
        }))

      it("remembers a 409 route_conflict: the key keeps that answer after the route in the way is gone", () =>
        serve(store, async (send) => {
          const holder = await send(post(route))
          const refused = await send(keyed({ ...route, path: "/users/:userId" }))
          assertProblem(refused, "route_conflict", ["conflictingRouteId"])
          assert.isNull(replayed(refused))
          const removed = await send({
            method: "DELETE",
            path: holder.headers.get("location")!,
            headers: headers(ADMIN)
          })
          assert.strictEqual(removed.status, 204)
          const again = await send(keyed({ ...route, path: "/users/:userId" }))
          assert.strictEqual(again.text, refused.text)
          assert.strictEqual(replayed(again), "true")
          assert.lengthOf(await routes(send), 0)
          // Without the key the shape is free.
          assert.strictEqual((await send(post({ ...route, path: "/users/:userId" }))).status, 201)
        }))

      it("remembers nothing of a request refused before the store, and refuses a malformed key by name", () =>
        serve(store, async (send) => {
          assertProblem(await send(keyed({ ...route, method: "get" })), "invalid_route", ["errors"])
          assertProblem(await send(keyed("{")), "malformed_json")
          assertProblem(
            await send({ ...keyed(route), headers: { ...headers(ADMIN, KEY), "content-type": "text/plain" } }),
            "unsupported_media_type"
          )
          const malformed = await send(keyed(route, "\"unclosed"))
          assertProblem(malformed, "invalid_idempotency_key")
          assert.match(malformed.json.detail, /^The Idempotency-Key header has no closing quote: send one key/)
          const created = await send(keyed(route))
          assert.strictEqual(created.status, 201)
          assert.isNull(replayed(created))
        }))

      it("scopes keys to the principal: another client's equal key is another key", () =>
        serve(store, async (send) => {
          const admins = await send(keyed(route, KEY, ADMIN))
          assert.strictEqual(admins.status, 201)
          const writers = await send(keyed(other, KEY, WRITER))
          assert.strictEqual(writers.status, 201, writers.text)
          assert.isNull(replayed(writers))
          // The writer's key is its own: the admin's route is not replayed to it, its own first answer is.
          const writersAgain = await send(keyed(route, KEY, WRITER))
          assertProblem(writersAgain, "idempotency_key_reused")
          assert.strictEqual((await send(keyed(other, KEY, WRITER))).text, writers.text)
        }))

      it("remembers no 503: the key is free again, and a retry creates", async () => {
        let failures = 1
        const flaky = wrapped(store, (service) => ({
          ...service,
          createIdempotent: (input, idempotency) =>
            failures-- > 0
              ? Effect.fail(new RouteRepository.StoreUnavailable({ reason: "test" }))
              : service.createIdempotent(input, idempotency)
        }))
        await serve(flaky, async (send) => {
          assertProblem(await send(keyed(route)), "store_unavailable")
          const retried = await send(keyed(route))
          assert.strictEqual(retried.status, 201)
          assert.isNull(replayed(retried))
          assert.lengthOf(await routes(send), 1)
        })
      })

      it("answers 409 idempotency_key_in_use while the first request with the key is running", async () => {
        const entered = Effect.runSync(Deferred.make<void>())
        const release = Effect.runSync(Deferred.make<void>())
        let first = true
        const slow = wrapped(store, (service) => ({
          ...service,
          createIdempotent: (input, idempotency) => {
            if (!first) return service.createIdempotent(input, idempotency)
            first = false
            return Deferred.succeed(entered, undefined).pipe(
              Effect.zipRight(Deferred.await(release)),
              Effect.zipRight(service.createIdempotent(input, idempotency))
            )
          }
        }))
        await serve(slow, async (send) => {
          const running = send(keyed(route))
          await Effect.runPromise(Deferred.await(entered))
          const busy = await send(keyed(route))
          assertProblem(busy, "idempotency_key_in_use")
          assert.match(busy.json.detail, /still being answered: retry with the same key/)
          // Another principal's equal key is not held.
          assert.strictEqual((await send(keyed(other, KEY, WRITER))).status, 201)
          Effect.runSync(Deferred.succeed(release, undefined))
          const created = await running
          assert.strictEqual(created.status, 201)
          const after = await send(keyed(route))
          assert.strictEqual(after.text, created.text)
          assert.strictEqual(replayed(after), "true")
        })
      })

      it("past the keys a client may hold: 429 too_many_idempotency_keys with Retry-After, and nothing written", async () => {
        const offset = { millis: 0 }
        const clocked = wrapped(store, (service) => ({
          ...service,
          createIdempotent: (input, idempotency) =>
            Effect.withClock(service.createIdempotent(input, idempotency), shiftedClock(offset))
        }))
        await serve(clocked, async (send) => {
          const first = await send(keyed(route, "\"one\""))
          assert.strictEqual(first.status, 201, first.text)
          offset.millis = 10_000
          assert.strictEqual((await send(keyed(other, "\"two\""))).status, 201)
          const refused = await send(keyed({ ...route, path: "/third/:id" }, "\"three\""))
          assertProblem(refused, "too_many_idempotency_keys")
          // The oldest key expires 60 s after its answer, 10 s ago: in 50 s, give or take the time the requests take.
          const retryAfter = Number(refused.headers.get("retry-after"))
          assert.isAtLeast(retryAfter, 49)
          assert.isAtMost(retryAfter, 50)
          assert.match(
            refused.json.detail,
            /^This client holds 2 Idempotency-Keys and may hold at most 2 \(idempotencyKeysPerPrincipal\), so nothing/
          )
          assert.match(
            refused.json.detail,
            /send the create without an Idempotency-Key, or retry after \d+ seconds, when its oldest key expires\.$/
          )
          assert.isNull(replayed(refused))
          assert.lengthOf(await routes(send), 2)
          // Its keys still answer; without a key, or as another client, it creates.
          assert.strictEqual((await send(keyed(route, "\"one\""))).text, first.text)
          assert.strictEqual((await send(post({ ...route, path: "/third/:id" }))).status, 201)
          assert.strictEqual((await send(keyed({ ...route, path: "/fourth/:id" }, "\"three\"", WRITER))).status, 201)
          // Once the oldest key expires its place is free, and the refused key was never taken.
          offset.millis = 60_000 + 1000
          const later = await send(keyed({ ...route, path: "/fifth/:id" }, "\"three\""))
          assert.strictEqual(later.status, 201, later.text)
          assert.isNull(replayed(later))
        }, { idempotencyKeysPerPrincipal: 2, idempotencyKeyExpirySeconds: 60 })
      })

      it("past the bytes a client's keys may count: 429 naming idempotencyKeyBytesPerPrincipal", () =>
        serve(store, async (send) => {
          assert.strictEqual((await send(keyed(route, "\"a\""))).status, 201)
          const refused = await send(keyed(other, `"${"b".repeat(Idempotency.MAX_KEY_LENGTH)}"`))
          assertProblem(refused, "too_many_idempotency_keys")
          assert.match(refused.json.detail, /idempotencyKeyBytesPerPrincipal: 600 bytes/)
          assert.match(refused.headers.get("retry-after") ?? "", /^\d+$/)
          assert.lengthOf(await routes(send), 1)
          assert.strictEqual((await send(keyed(other, "\"b\""))).status, 201)
        }, { idempotencyKeyBytesPerPrincipal: 600 }))

      it("forgets a key once it expires (24 hours by default, configurable): an expired key is new", async () => {
        const offset = { millis: 0 }
        const lifetimes: Array<number> = []
        const clocked = wrapped(store, (service) => ({
          ...service,
          createIdempotent: (input, idempotency) => {
            lifetimes.push(Duration.toMillis(idempotency.expiresAfter))
            return Effect.withClock(service.createIdempotent(input, idempotency), shiftedClock(offset))
          }
        }))
        await serve(clocked, async (send) => {
          assert.strictEqual((await send(keyed(route))).status, 201)
          assert.deepStrictEqual(lifetimes, [86_400_000])
        })
        offset.millis = 0
        await serve(clocked, async (send) => {
          const created = await send(keyed(route))
          assert.strictEqual(created.status, 201)
          offset.millis = 60_000 - 1000 // well within the minute, whatever the time the requests take
          assertProblem(await send(keyed(other)), "idempotency_key_reused")
          offset.millis = 60_000 + 1000
          const renewed = await send(keyed(other))
          assert.strictEqual(renewed.status, 201, renewed.text)
          assert.isNull(replayed(renewed))
          assert.notStrictEqual(renewed.json.id, created.json.id)
          // The key now stands for its new first answer.
          assert.strictEqual((await send(keyed(other))).text, renewed.text)
        }, { idempotencyKeyExpirySeconds: 60 })
      })
    })
  }
}

for (
  const option of ["idempotencyKeyExpirySeconds", "idempotencyKeysPerPrincipal", "idempotencyKeyBytesPerPrincipal"]
) {
  describe(option, () => {
    it("is refused unless a whole number from 1", async () => {
      // A byte budget holds at least one key of the longest kind.
      const values = option === "idempotencyKeyBytesPerPrincipal" ? [0, 510, 1.5e3 + 0.5] : [0, -1, 1.5, Number.NaN]
      for (const value of values) {
        const failed = await nodeListener.start(Layer.merge(RouteRepository.layerMemory, tokens), {
          [option]: value
        }).then(() => undefined, (error: unknown) => error)
        assert.include(String((failed as { message?: unknown })?.message), option, String(value))
      }
    })
  })
}

// ---------------------------------------------------------------------------------------------------------------
// Postgres: several processes on one database, and the key written with its route
// ---------------------------------------------------------------------------------------------------------------

const input = { method: "GET", path: "/users/:id", middleware: [], handler: "show" } as unknown as Parameters<
  Service["createIdempotent"]
>[0]

const otherInput = { ...input, handler: "another" } as typeof input

const idempotency: RouteRepository.Idempotency = {
  key: "k",
  principal: "admin",
  expiresAfter: Duration.hours(24),
  maxKeys: 10_000,
  maxBytes: 4 * 1024 * 1024
}

/** Two stores on one table, each with a pool of its own (two processes), and a third pool for the test. */
const twoStores = (options: PgRouteRepository.Options = {}) =>
  Effect.gen(function*() {
    const table = TestDatabase.freshTable()
    const store = () =>
      Layer.build(TestDatabase.storeLayer({ ...options, table }).pipe(Layer.provide(TestDatabase.layer())))
    const a = yield* store()
    const b = yield* store()
    const sql = yield* Effect.map(
      Layer.build(TestDatabase.layer()),
      (context) => Context.get(context, SqlClient.SqlClient)
    )
    yield* Effect.addFinalizer(() =>
      PgRouteRepository.uninstall({ table }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
    )
    return { table, a, b, sql }
  })

/** A store on a fresh table for two processes to share, uninstalled when the running test finishes. */
const sharedStore = () => {
  const table = TestDatabase.freshTable()
  onTestFinished(() =>
    Effect.runPromise(PgRouteRepository.uninstall({ table }).pipe(Effect.provide(TestDatabase.layer()), Effect.orDie))
  )
  return TestDatabase.storeLayer({ table }).pipe(Layer.provide(TestDatabase.layer()))
}

/**
 * Holds `LOCK TABLE … IN SHARE MODE` on the routes table in a transaction of the test's own until `release`: a create
 * that has taken its key's lock then waits at its insert. Resolves once the lock is held.
 */
const blockInserts = (sql: SqlClient.SqlClient, table: string, release: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    const held = yield* Deferred.make<void>()
    const fiber = yield* Effect.fork(
      sql.withTransaction(
        Effect.zipRight(
          sql`LOCK TABLE ${sql(table)} IN SHARE MODE`,
          Effect.zipRight(Deferred.succeed(held, undefined), Deferred.await(release))
        )
      )
    )
    yield* Deferred.await(held)
    return fiber
  })

/** Waits until some session waits for a lock on `table`: the create under test has reached its insert. */
const insertWaiting = (sql: SqlClient.SqlClient, table: string) =>
  sql<{ waiting: string }>`
    SELECT count(*) AS waiting FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
    WHERE NOT l.granted AND c.relname = ${table}`.pipe(
    Effect.repeat({ until: (rows) => Number(rows[0]!.waiting) > 0, schedule: Schedule.spaced("10 millis") })
  )

/** Waits until no other session is inside a statement or transaction on `table`: an abandoned one has rolled back. */
const settled = (sql: SqlClient.SqlClient, table: string) =>
  sql<{ busy: string }>`
    SELECT count(*) AS busy FROM pg_stat_activity
    WHERE pid <> pg_backend_pid() AND state <> 'idle' AND strpos(query, ${table}) > 0`.pipe(
    Effect.repeat({ until: (rows) => Number(rows[0]!.busy) === 0, schedule: Schedule.spaced("10 millis") })
  )

describe("Postgres store, several processes on one database", () => {
  it.live("a key held by one process is in use for another, and replayed to it once committed", () => {
    return Effect.scoped(Effect.gen(function*() {
      const { a, b, sql, table } = yield* twoStores()
      const release = yield* Deferred.make<void>()
      const lock = yield* blockInserts(sql, table, release)
      const first = yield* Effect.fork(remembering(a)(input, idempotency))
      yield* insertWaiting(sql, table)
      const busy = yield* Effect.flip(remembering(b)(input, idempotency))
      assert.strictEqual(busy._tag, "IdempotencyKeyInUse")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(lock)
      const created = yield* Fiber.join(first)
      assert.isFalse(created.replayed)
      const again = yield* remembering(b)(input, idempotency)
      assert.isTrue(again.replayed)
      assert.deepStrictEqual(again.outcome, created.outcome)
      const reused = yield* Effect.flip(remembering(b)(otherInput, idempotency))
      assert.strictEqual(reused._tag, "IdempotencyKeyReused")
    }))
  })

  it.live("a create that fails between its route and its key leaves neither, and a retry creates", () => {
    return Effect.scoped(Effect.gen(function*() {
      const { a, sql, table } = yield* twoStores({ queryTimeout: Duration.millis(300) })
      const release = yield* Deferred.make<void>()
      const lock = yield* blockInserts(sql, table, release)
      // Its insert waits for the lock until the store's deadline interrupts it: the transaction is rolled back.
      const failed = yield* Effect.flip(remembering(a)(input, idempotency))
      assert.strictEqual(failed._tag, "StoreUnavailable")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(lock)
      yield* settled(sql, table)
      assert.deepStrictEqual(yield* sql`SELECT id FROM ${sql(table)}`, [])
      const retried = yield* remembering(a)(input, idempotency)
      assert.isFalse(retried.replayed)
      assert.isTrue(Either.isRight(retried.outcome))
    }))
  })

  it("concurrent POSTs with new keys to two processes: the client's bound holds exactly", async () => {
    const store = sharedStore()
    const bound = { idempotencyKeysPerPrincipal: 5 }
    const one = await nodeListener.start(Layer.merge(store, tokens), bound)
    const two = await nodeListener.start(Layer.merge(store, tokens), bound)
    onTestFinished(async () => {
      await one.close()
      await two.close()
    })
    const answers = await Promise.all(
      Array.from(
        { length: 16 },
        (_, i) => (i % 2 === 0 ? one : two).send(keyed({ ...route, path: `/race/${i}/:id` }, `"key-${i}"`))
      )
    )
    assert.lengthOf(answers.filter((answer) => answer.status === 201), 5)
    for (const answer of answers) if (answer.status !== 201) assertProblem(answer, "too_many_idempotency_keys")
    assert.lengthOf(await routes(one.send), 5)
  })

  it("concurrent POSTs with one key to two processes create exactly one route", async () => {
    const store = sharedStore()
    const one = await nodeListener.start(Layer.merge(store, tokens))
    const two = await nodeListener.start(Layer.merge(store, tokens))
    onTestFinished(async () => {
      await one.close()
      await two.close()
    })
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? one : two).send(keyed(route)))
    )
    const created = answers.filter((answer) => answer.status === 201)
    for (const answer of answers) {
      if (answer.status !== 201) assertProblem(answer, "idempotency_key_in_use")
    }
    assert.lengthOf(created.filter((answer) => replayed(answer) === null), 1)
    assert.lengthOf(new Set(created.map((answer) => answer.json.id)), 1)
    const last = await two.send(keyed(route))
    assert.strictEqual(replayed(last), "true")
    assert.strictEqual(last.json.id, created[0]!.json.id)
    assert.lengthOf(await routes(one.send), 1)
    assert.strictEqual((await one.send(get(created[0]!.json.id))).status, 200)
  })

  it("concurrent batches with one key to two processes apply exactly once, and both replay it (docs/batches.md)", async () => {
    const store = sharedStore()
    const one = await nodeListener.start(Layer.merge(store, tokens))
    const two = await nodeListener.start(Layer.merge(store, tokens))
    onTestFinished(async () => {
      await one.close()
      await two.close()
    })
    const batch = (body: unknown): Sent => ({
      method: "POST",
      path: "/v1/routing/batch",
      headers: headers(ADMIN, KEY),
      body: JSON.stringify(body)
    })
    const body = { operations: [{ op: "create", route }, { op: "create", route: other }] }
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? one : two).send(batch(body))))
    const applied = answers.filter((answer) => answer.status === 200)
    for (const answer of answers) {
      if (answer.status !== 200) assertProblem(answer, "idempotency_key_in_use")
    }
    assert.lengthOf(applied.filter((answer) => replayed(answer) === null), 1)
    assert.lengthOf(new Set(applied.map((answer) => answer.text)), 1)
    for (const process of [one, two]) {
      const last = await process.send(batch(body))
      assert.deepStrictEqual([replayed(last), last.text, last.headers.get("registry-revision")], [
        "true",
        applied[0]!.text,
        applied[0]!.headers.get("registry-revision")
      ])
    }
    assert.lengthOf(await routes(one.send), 2)
    // The key of a batch is no create's: a create with it is refused, as is another batch.
    assertProblem(await two.send(keyed(route)), "idempotency_key_reused")
    assertProblem(await one.send(batch({ operations: [{ op: "create", route }] })), "idempotency_key_reused")
  })
})

// A route table over the store (npm start, every host that routes) must see a keyed create as it sees a create.
describe("with a route table over the store", () => {
  for (const [storeName, store] of stores) {
    it.effect(`${storeName}: a route created with a key is routed at once, and a replay does not bring it back`, () =>
      Effect.gen(function*() {
        const context = yield* Layer.build(RouteTable.layer.pipe(Layer.provide(store)))
        const repository = Context.get(context, RouteRepository.RouteRepository)
        const table = Context.get(context, RouteTable.RouteTable)
        const create = remembering(context)
        const first = yield* create(input, idempotency)
        assert.isTrue(Either.isRight(first.outcome))
        const id = Either.getOrThrow(first.outcome).id
        assert.strictEqual(RouteTable.get(table, id)?.id, id, "routed before the create is acknowledged")
        yield* repository.remove(id)
        const replay = yield* create(input, idempotency)
        assert.isTrue(replay.replayed)
        assert.isUndefined(RouteTable.get(table, id), "the replayed answer names a removed route: it stays out")
      }).pipe(Effect.scoped, Effect.orDie))
  }
})
