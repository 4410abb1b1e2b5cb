import * as HttpServer from "@effect/platform/HttpServer"
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import { ServerLive } from "../../examples/effect-router.js"
import { type Adapter, fetchFrom } from "../utils/adapters.js"
import { ADMIN, failingStore, failureContract, httpContract, tokens } from "../utils/httpContract.js"
import { admin, createRoute, failingAfterStart } from "../utils/routerHost.js"
import { stores } from "../utils/stores.js"

const effectRouter: Adapter = {
  name: "examples/effect-router",
  start: async (services, options) => {
    const runtime = ManagedRuntime.make(
      ServerLive({ port: 0, host: "127.0.0.1" }, options).pipe(Layer.provide(services))
    )
    const origin = await runtime.runPromise(HttpServer.addressFormattedWith((address) => Effect.succeed(address)))
    return { send: fetchFrom(origin), fetch: globalThis.fetch, origin, close: () => runtime.dispose() }
  }
}

const effectRouterStoreFailingLater: Adapter = {
  ...effectRouter,
  start: (services, options) => effectRouter.start(failingAfterStart(services), options)
}

describe("examples/effect-router", () => {
  describe("the routing API's router beside the host's", () => httpContract(effectRouter, RouteRepository.layerMemory))
  describe("failures of the store after start-up", () => failureContract(effectRouterStoreFailingLater))

  it("does not start over a store it cannot load the table from", async () => {
    const error = await effectRouter.start(Layer.merge(failingStore("unavailable"), tokens)).then(
      () => "started",
      String
    )
    assert.include(error, "StoreUnavailable")
  })

  it("the host's own routes keep working, and other paths get the server's 404", async () => {
    const server = await effectRouter.start(Layer.merge(RouteRepository.layerMemory, tokens))
    onTestFinished(() => server.close())
    const health = await server.send({ method: "GET", path: "/health" })
    assert.strictEqual(health.status, 200)
    assert.deepStrictEqual(health.json, { status: "ok" })
    for (const path of ["/nope", "/v1/routings", "/v1/routing/a/b"]) {
      const response = await server.send({ method: "GET", path, headers: { authorization: `Bearer ${ADMIN}` } })
      assert.strictEqual(response.status, 404, path)
      assert.strictEqual(response.text, "", path) // the platform's empty 404, not a problem document
    }
  })

  describe.each(stores)("the router on the %s", (_name, store) => {
    it("a route created through the API is served by the host's functions at once, until it is deleted", async () => {
      const server = await effectRouter.start(Layer.merge(store, tokens))
      onTestFinished(() => server.close())
      const created = await server.send(
        createRoute({ method: "GET", path: "/users/:id", middleware: ["auth"], handler: "showUser" })
      )
      assert.strictEqual(created.status, 201, created.text)
      const user = await server.send({ method: "GET", path: "/users/1", headers: { authorization: "Bearer x" } })
      assert.strictEqual(user.status, 200)
      assert.deepStrictEqual(user.json, { id: "1", name: "Ada Lovelace" })
      const missing = await server.send({ method: "GET", path: "/users/9", headers: { authorization: "Bearer x" } })
      assert.strictEqual(missing.status, 404)
      assert.deepStrictEqual(missing.json, { error: "no user 9" })
      // The middleware answers itself: the handler never runs.
      const anonymous = await server.send({ method: "GET", path: "/users/1" })
      assert.strictEqual(anonymous.status, 401)
      assert.deepStrictEqual(anonymous.json, { error: "sign in first" })

      const listed = await server.send(createRoute({ method: "GET", path: "/users", handler: "listUsers" }))
      assert.strictEqual(listed.status, 201)
      assert.strictEqual((await server.send({ method: "GET", path: "/users" })).json.length, 2)
      // The host's own routes come first.
      assert.deepStrictEqual((await server.send({ method: "GET", path: "/health" })).json, { status: "ok" })

      const removed = await server.send({ method: "DELETE", path: `/v1/routing/${created.json.id}`, headers: admin })
      assert.strictEqual(removed.status, 204)
      const gone = await server.send({ method: "GET", path: "/users/1", headers: { authorization: "Bearer x" } })
      assert.strictEqual(gone.status, 404)
      assert.strictEqual(gone.text, "") // the server's own 404: the router handed it on
    })
  })
})
