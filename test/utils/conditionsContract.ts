/**
 * The repository contract of conditions (docs/router.md: conditions): stored in canonical form, left out when there
 * are none, and part of the conflict rule (same method, shape and conditions as a set), alike in every store.
 */
import { assert } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"

import * as Logged from "./logged.js"
import { create, json, update } from "./safeChangesContract.js"

type Test = (name: string, body: () => Effect.Effect<void, unknown, Logged.Stored>) => void

const repository = RouteRepository.RouteRepository

// Given in no particular order, with a header name in capitals: stored as CANONICAL.
const GIVEN = {
  query: [{ name: "beta" }],
  headers: [{ name: "X-Version", value: "2" }, { name: "accept", value: "application/json" }],
  host: "*.example.com"
}
const CANONICAL = `{"host":"*.example.com","headers":[{"name":"accept","value":"application/json"},` +
  `{"name":"x-version","value":"2"}],"query":[{"name":"beta"}]}`

const whenJson = (route: Route.Route) => Route.toJson(route).match(/,"when":(.*)}$/)?.[1]

export const conditionsContract = (test: Test) => {
  test("conditions are stored in canonical form, read back and listed byte for byte; {} is none", () =>
    Effect.gen(function*() {
      const repo = yield* repository
      const created = yield* create({ method: "GET", path: "/c/:id", handler: "h", when: GIVEN })
      assert.strictEqual(whenJson(created), CANONICAL)
      assert.strictEqual(Route.toJson(yield* repo.findById(created.id)), Route.toJson(created))
      const page = yield* repo.list({ limit: 10 })
      assert.strictEqual(Route.toJson(page.items[0]!), Route.toJson(created))
      const plain = yield* create({ method: "GET", path: "/plain", handler: "h", when: {} })
      assert.deepStrictEqual(Object.keys(json(plain)), ["id", "method", "path", "middleware", "handler", "createdAt"])
    }))

  test("same method, shape and conditions (as a set, header names in any case) conflict; other conditions do not", () =>
    Effect.gen(function*() {
      const first = yield* create({ method: "GET", path: "/users/:id", handler: "h", when: GIVEN })
      const reordered = {
        host: "*.example.com",
        headers: [{ name: "x-version", value: "2" }, { name: "Accept", value: "application/json" }],
        query: [{ name: "beta" }]
      }
      const twin = yield* Effect.either(
        create({ method: "GET", path: "/users/:userId", handler: "h", when: reordered })
      )
      assert.isTrue(Either.isLeft(twin))
      if (Either.isLeft(twin)) {
        assert.strictEqual(twin.left._tag, "RouteConflict")
        const conflict = twin.left as RouteRepository.RouteConflict
        assert.strictEqual(conflict.conflictingRouteId, first.id)
        // The error names the conditions both have, canonical whichever way the refused route wrote them.
        assert.strictEqual(JSON.stringify(conflict.when), CANONICAL)
        assert.strictEqual(
          conflict.message,
          `GET /users/:userId with the conditions ${CANONICAL} has the same method, shape and conditions as route ${first.id}`
        )
      }
      // Without conditions, with fewer, or with another value: a route of its own.
      yield* create({ method: "GET", path: "/users/:id", handler: "h" })
      yield* create({ method: "GET", path: "/users/:id", handler: "h", when: { host: "*.example.com" } })
      yield* create({
        method: "GET",
        path: "/users/:id",
        handler: "h",
        when: { ...GIVEN, query: [{ name: "beta", value: "1" }] }
      })
      const repo = yield* repository
      assert.strictEqual((yield* repo.list({ limit: 10 })).items.length, 4)
    }))

  test("concurrent creates of one shape keep each set of conditions once (a store's batched insert)", () =>
    Effect.gen(function*() {
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 12 }, (_, i) => i),
        (i) =>
          Effect.either(
            create({
              method: "GET",
              path: "/b",
              handler: "h",
              when: { headers: [{ name: "x-n", value: String(i % 6) }] }
            })
          ),
        { concurrency: 12 }
      )
      assert.strictEqual(outcomes.filter(Either.isRight).length, 6)
      assert.strictEqual(outcomes.filter(Either.isLeft).length, 6)
      const repo = yield* repository
      for (const outcome of outcomes) {
        if (Either.isRight(outcome)) {
          assert.strictEqual(Route.toJson(yield* repo.findById(outcome.right.id)), Route.toJson(outcome.right))
        }
      }
    }))

  test("a patch sets, changes and clears conditions; onto another route's conditions it conflicts", () =>
    Effect.gen(function*() {
      const a = yield* create({ method: "GET", path: "/p", handler: "h", when: { host: "a.example.com" } })
      const b = yield* create({ method: "GET", path: "/p", handler: "h" })
      const onto = yield* Effect.either(update(b.id, { when: { host: "a.example.com" } }))
      assert.isTrue(Either.isLeft(onto) && onto.left._tag === "RouteConflict")
      if (Either.isLeft(onto)) {
        assert.deepStrictEqual((onto.left as RouteRepository.RouteConflict).when, { host: "a.example.com" })
      }
      const moved = yield* update(b.id, { when: { host: "b.example.com" } })
      assert.deepStrictEqual(moved.when, { host: "b.example.com" })
      const same = yield* update(b.id, { when: { host: "b.example.com" } })
      assert.strictEqual(same.revision, moved.revision)
      const cleared = yield* update(b.id, { when: {} })
      assert.strictEqual(Route.toJson(cleared), Route.toJson(b))
      const setAgain = yield* update(b.id, { when: { host: "c.example.com" } })
      const nulled = yield* update(b.id, { when: null })
      assert.strictEqual(nulled.when, undefined)
      assert.isAbove(nulled.revision, setAgain.revision)
      // A route without conditions may not take the shape of another without any.
      const clash = yield* Effect.either(update(a.id, { when: null }))
      assert.isTrue(Either.isLeft(clash) && clash.left._tag === "RouteConflict")
      // Neither has conditions: the error and its message are as before conditions existed.
      if (Either.isLeft(clash)) {
        assert.isFalse("when" in clash.left)
        assert.strictEqual(clash.left.message, `GET /p has the same method and shape as route ${b.id}`)
      }
    }))

  test("the log records conditions in before and after; a restore brings them back, and conflicts as a create", () =>
    Effect.gen(function*() {
      const repo = yield* repository
      const created = yield* create({ method: "GET", path: "/r", handler: "h", when: GIVEN })
      const changed = yield* update(created.id, { when: null })
      const entries = (yield* Logged.history({ limit: 10, routeId: created.id })).items
      assert.deepStrictEqual(entries.map((entry) => [json(entry.before), json(entry.after)]), [
        [json(created), json(changed)],
        [null, json(created)]
      ])
      assert.strictEqual(whenJson(entries[1]!.after!), CANONICAL)
      const back = yield* Logged.restore(created.id, created.revision)
      assert.strictEqual(Route.toJson(back.route), Route.toJson(created))
      yield* repo.remove(created.id)
      yield* create({ method: "GET", path: "/r", handler: "other", when: GIVEN })
      const refused = yield* Effect.either(Logged.restore(created.id, created.revision))
      assert.isTrue(Either.isLeft(refused) && refused.left._tag === "RouteConflict")
      if (Either.isLeft(refused)) {
        assert.strictEqual(JSON.stringify((refused.left as RouteRepository.RouteConflict).when), CANONICAL)
      }
    }))
}
