import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { program } from "../../examples/programmatic.js"
import { failingStore } from "../utils/httpContract.js"

describe("examples/programmatic", () => {
  it.effect("creates, refuses a conflict and an invalid input by tag, finds the route, misses an unknown id", () =>
    Effect.gen(function*() {
      const { conflict, created, found, missing, refused } = yield* program
      assert(created._tag === "Created")
      assert.isTrue(Route.isRouteId(created.route.id))
      assert.deepStrictEqual(
        { method: created.route.method, path: created.route.path, middleware: created.route.middleware },
        { method: "GET", path: "/users/:id", middleware: ["auth"] }
      )
      assert.deepStrictEqual(conflict, { _tag: "Conflict", conflictingRouteId: created.route.id })
      assert(refused._tag === "Refused")
      assert.deepStrictEqual(refused.errors.map((issue) => issue.path), ["method", "path", "middlewares"])
      assert.deepStrictEqual(found, Option.some(created.route))
      assert.isTrue(Option.isNone(missing))
    }).pipe(Effect.provide(RouteRepository.layerMemory)))

  it.effect("a store that is unavailable fails the program with StoreUnavailable, not a defect", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(program)
      assert.strictEqual(error._tag, "StoreUnavailable")
    }).pipe(Effect.provide(failingStore("unavailable"))))
})
