/**
 * The repository contract: what every store must do. Each store's test file runs it with its own layer; every
 * test gets a fresh, empty store.
 */
import type { Vitest } from "@effect/vitest"
import { assert } from "@effect/vitest"
import { Effect, Either, Layer, TestClock } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { accepted, refused } from "../fixtures/samples.js"

const NOW = Date.parse("2026-11-21T09:30:12.345Z")

const input = (body: Record<string, unknown>) => Effect.orDie(Route.decodeCreate(body))

const create = (body: Record<string, unknown>) =>
  Effect.flatMap(input(body), (value) => Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.create(value)))

const findById = (id: string) => Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.findById(id))

export const repositoryContract = <R>(
  it: Vitest.MethodsNonLive<R>,
  store: Layer.Layer<RouteRepository.RouteRepository, unknown, R>
) => {
  const test = (name: string, body: () => Effect.Effect<void, unknown, RouteRepository.RouteRepository>) =>
    it.effect(name, () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(NOW)
        yield* body()
      }).pipe(Effect.provide(store)))

  for (const sample of accepted) {
    test(`round-trips byte for byte: ${sample.name}`, () =>
      Effect.gen(function*() {
        const created = yield* create(sample.body)
        assert.isTrue(Route.isRouteId(created.id))
        assert.deepStrictEqual(JSON.parse(JSON.stringify(created)), {
          id: created.id,
          middleware: [],
          ...sample.body,
          createdAt: "2026-11-21T09:30:12.345Z"
        })
        const found = yield* findById(created.id)
        assert.strictEqual(JSON.stringify(found), JSON.stringify(created))
      }))
  }

  for (const sample of refused) {
    test(`refuses before storing: ${sample.name}`, () =>
      Effect.gen(function*() {
        const repo = yield* RouteRepository.RouteRepository
        const error = yield* Effect.flip(Effect.flatMap(Route.decodeCreate(sample.body), repo.create))
        assert.strictEqual(error._tag, "InvalidRoute")
        if (error._tag === "InvalidRoute") {
          assert.deepStrictEqual(error.errors.map((e) => e.path), sample.errors.map(([path]) => path))
        }
      }))
  }

  test("middleware omitted is stored and returned as []", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/x", handler: "h" })
      assert.deepStrictEqual((yield* findById(created.id)).middleware, [])
    }))

  test("createdAt has millisecond precision and the toISOString form", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(0)
      const epoch = yield* create({ method: "GET", path: "/epoch", handler: "h" })
      yield* TestClock.setTime(NOW + 0.9) // a fractional clock reading never leaks past the millisecond
      const now = yield* create({ method: "GET", path: "/now", handler: "h" })
      assert.strictEqual((yield* findById(epoch.id)).createdAt.toISOString(), "1970-01-01T00:00:00.000Z")
      assert.strictEqual(JSON.parse(JSON.stringify(yield* findById(now.id))).createdAt, "2026-11-21T09:30:12.345Z")
    }))

  test("the same method and path conflicts, naming the stored route", () =>
    Effect.gen(function*() {
      const first = yield* create({ method: "GET", path: "/users/:id", handler: "show" })
      const error = yield* Effect.flip(create({ method: "GET", path: "/users/:id", handler: "other" }))
      assert.deepStrictEqual(
        error,
        new RouteRepository.RouteConflict({ method: "GET", path: "/users/:id", conflictingRouteId: first.id })
      )
    }))

  test("renamed parameters conflict (same shape)", () =>
    Effect.gen(function*() {
      const first = yield* create({ method: "GET", path: "/users/:id/posts/:postId", handler: "h" })
      const error = yield* Effect.flip(create({ method: "GET", path: "/users/:userId/posts/:p", handler: "h" }))
      assert.strictEqual(error._tag, "RouteConflict")
      assert.strictEqual((error as RouteRepository.RouteConflict).conflictingRouteId, first.id)
    }))

  test("a static segment beside a parameter does not conflict", () =>
    Effect.gen(function*() {
      const param = yield* create({ method: "GET", path: "/users/:id", handler: "show" })
      const me = yield* create({ method: "GET", path: "/users/me", handler: "me" })
      assert.notStrictEqual(param.id, me.id)
      assert.strictEqual((yield* findById(me.id)).handler, "me")
    }))

  test("another method on the same path does not conflict", () =>
    Effect.gen(function*() {
      yield* create({ method: "GET", path: "/users/:id", handler: "show" })
      const put = yield* create({ method: "PUT", path: "/users/:id", handler: "update" })
      assert.strictEqual((yield* findById(put.id)).method, "PUT")
    }))

  test("methods are case-sensitive keys of distinct shapes", () =>
    Effect.gen(function*() {
      yield* create({ method: "M-SEARCH", path: "/a", handler: "h" })
      yield* create({ method: "SEARCH", path: "/a", handler: "h" })
      const error = yield* Effect.flip(create({ method: "M-SEARCH", path: "/a", handler: "x" }))
      assert.strictEqual(error._tag, "RouteConflict")
    }))

  test("100 concurrent creates of one shape: exactly one wins, the others name it", () =>
    Effect.gen(function*() {
      const results = yield* Effect.all(
        Array.from({ length: 100 }, (_, i) =>
          Effect.either(create({ method: "POST", path: `/race/:p${i}`, handler: "h" }))),
        { concurrency: "unbounded" }
      )
      const wins = results.filter(Either.isRight).map((r) =>
        r.right
      )
      assert.strictEqual(wins.length, 1)
      const winner = wins[0]!
      for (const result of results.filter(Either.isLeft)) {
        assert.strictEqual(result.left._tag, "RouteConflict")
        assert.strictEqual((result.left as RouteRepository.RouteConflict).conflictingRouteId, winner.id)
      }
      assert.strictEqual((yield* findById(winner.id)).path, winner.path)
    }))

  test("ids are unique UUIDv7s, even within one millisecond", () =>
    Effect.gen(function*() {
      const routes = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => create({ method: "GET", path: `/unique/${i}`, handler: "h" }),
        { concurrency: 10 }
      )
      const ids = new Set(routes.map((route) => route.id))
      assert.strictEqual(ids.size, 200)
      for (const id of ids) assert.isTrue(Route.isRouteId(id))
    }))

  test("unknown and impossible ids are not found", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/exists", handler: "h" })
      const missing = Route.makeRouteId(NOW)
      for (const id of [missing, "not-a-uuid", "", created.id.toUpperCase(), `${created.id} `, "'; DROP TABLE x; --"]) {
        const error = yield* Effect.flip(findById(id))
        assert.deepStrictEqual(error, new RouteRepository.RouteNotFound({ id }))
      }
    }))

  it.effect("takes ids from the RouteIdGenerator it was built with", () =>
    Effect.gen(function*() {
      let n = 0
      const ids = Layer.succeed(RouteRepository.RouteIdGenerator, {
        next: (millis) => Route.makeRouteId(millis).replace(/.{4}$/, String(1000 + n++)) as Route.RouteId
      })
      const result = yield* Effect.gen(function*() {
        const a = yield* create({ method: "GET", path: "/a", handler: "h" })
        const b = yield* create({ method: "GET", path: "/b", handler: "h" })
        return [a.id.slice(-4), b.id.slice(-4), (yield* findById(b.id)).id === b.id]
      }).pipe(Effect.provide(Layer.provide(store, ids)))
      assert.deepStrictEqual(result, ["1000", "1001", true])
    }))
}
