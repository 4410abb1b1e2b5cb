import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { demo } from "../../examples/client.js"
import { nodeListener } from "../utils/adapters.js"
import { ADMIN, READER, tokens } from "../utils/httpContract.js"

describe("examples/client", () => {
  it("creates and gets a route, and receives the 409 as a typed route_conflict problem", async () => {
    const server = await nodeListener.start(Layer.merge(RouteRepository.layerMemory, tokens))
    try {
      const { conflict, created, found } = await Effect.runPromise(demo(server.origin, Redacted.make(ADMIN)))
      assert.instanceOf(created, Route.Route)
      assert.strictEqual(created.path, "/users/:id")
      assert.deepStrictEqual(found, created)
      assert.deepInclude(conflict, { status: 409, code: "route_conflict", conflictingRouteId: created.id })
    } finally {
      await server.close()
    }
  })

  it("any other problem stays in the error channel, typed by its code", async () => {
    const server = await nodeListener.start(Layer.merge(RouteRepository.layerMemory, tokens))
    try {
      const error = await Effect.runPromise(Effect.flip(demo(server.origin, Redacted.make(READER))))
      assert.deepInclude(error, { status: 403, code: "insufficient_scope" })
    } finally {
      await server.close()
    }
  })
})
