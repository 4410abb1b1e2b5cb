import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { demo } from "../../examples/client.js"
import { nodeListener } from "../utils/adapters.js"
import { ADMIN, get, READER, tokens } from "../utils/httpContract.js"

describe("examples/client", () => {
  it("creates, gets, lists, updates and deletes a route, and receives the 409 as a typed problem", async () => {
    const server = await nodeListener.start(Layer.merge(RouteRepository.layerMemory, tokens))
    onTestFinished(() => server.close())
    const { conflict, created, found, page, updated } = await Effect.runPromise(
      demo(server.origin, Redacted.make(ADMIN))
    )
    assert.instanceOf(created, Route.Route)
    assert.match(created.path, /^\/demo-[0-9a-f]{8}\/users\/:id$/)
    assert.deepStrictEqual(found, created)
    assert.deepInclude(conflict, { status: 409, code: "route_conflict", conflictingRouteId: created.id })
    assert.deepStrictEqual(page, { items: [created], nextCursor: null })
    assert.deepStrictEqual(updated.middleware, ["auth" as Route.MiddlewareName])
    assert.strictEqual(updated.id, created.id)
    assert.strictEqual((await server.send(get(created.id))).status, 404) // deleted at the end
  })

  it("runs again against the same server", async () => {
    const server = await nodeListener.start(Layer.merge(RouteRepository.layerMemory, tokens))
    onTestFinished(() => server.close())
    const first = await Effect.runPromise(demo(server.origin, Redacted.make(ADMIN)))
    const second = await Effect.runPromise(demo(server.origin, Redacted.make(ADMIN)))
    assert.notStrictEqual(second.created.id, first.created.id)
    assert.deepInclude(second.conflict, { code: "route_conflict", conflictingRouteId: second.created.id })
  })

  it("any other problem stays in the error channel, typed by its code", async () => {
    const server = await nodeListener.start(Layer.merge(RouteRepository.layerMemory, tokens))
    onTestFinished(() => server.close())
    const error = await Effect.runPromise(Effect.flip(demo(server.origin, Redacted.make(READER))))
    assert.deepInclude(error, { status: 403, code: "insufficient_scope" })
  })
})
