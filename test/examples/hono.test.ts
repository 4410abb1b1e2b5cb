import { assert, describe, it } from "@effect/vitest"
import { getRequestListener } from "@hono/node-server"
import { Layer } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import { makeApp } from "../../examples/hono.js"
import { type Adapter, serveNode } from "../utils/adapters.js"
import { ADMIN, failingStore, failureContract, httpContract, tokens } from "../utils/httpContract.js"
import { admin, createRoute, failingAfterStart } from "../utils/routerHost.js"
import { stores } from "../utils/stores.js"

const hono: Adapter = {
  name: "examples/hono",
  start: async (services, options) => {
    const { app, dispose } = await makeApp(services, options)
    return serveNode(getRequestListener(app.fetch, { overrideGlobalObjects: false }), dispose)
  }
}

const honoStoreFailingLater: Adapter = {
  ...hono,
  start: (services, options) => hono.start(failingAfterStart(services), options)
}

describe("examples/hono", () => {
  describe("the routing API mounted in Hono", () => httpContract(hono, RouteRepository.layerMemory))
  describe("failures of the store after start-up", () => failureContract(honoStoreFailingLater))

  it("does not start over a store it cannot load the table from", async () => {
    const error = await makeApp(Layer.merge(failingStore("unavailable"), tokens)).then(() => "started", String)
    assert.include(error, "StoreUnavailable")
  })

  it("the host's own routes keep working, and other paths fall through to Hono's not-found", async () => {
    const server = await hono.start(Layer.merge(RouteRepository.layerMemory, tokens))
    try {
      const health = await server.send({ method: "GET", path: "/health" })
      assert.strictEqual(health.status, 200)
      assert.deepStrictEqual(health.json, { status: "ok" })
      for (const path of ["/nope", "/v1/routings", "/v1/routing/a/b"]) {
        const response = await server.send({ method: "GET", path, headers: { authorization: `Bearer ${ADMIN}` } })
        assert.strictEqual(response.status, 404, path)
        assert.strictEqual(response.text, "404 Not Found", path) // Hono's own not-found
      }
    } finally {
      await server.close()
    }
  })

  describe.each(stores)("the router on the %s", (_name, store) => {
    it("a route created through the API is served by the host's functions at once, until it is deleted", async () => {
      const server = await hono.start(Layer.merge(store, tokens))
      try {
        const created = await server.send(
          createRoute({ method: "GET", path: "/users/:id", middleware: ["auth"], handler: "showUser" })
        )
        assert.strictEqual(created.status, 201, created.text)
        const user = await server.send({ method: "GET", path: "/users/2", headers: { authorization: "Bearer x" } })
        assert.strictEqual(user.status, 200)
        assert.deepStrictEqual(user.json, { id: "2", name: "Grace Hopper" })
        const missing = await server.send({ method: "GET", path: "/users/9", headers: { authorization: "Bearer x" } })
        assert.strictEqual(missing.status, 404)
        assert.deepStrictEqual(missing.json, { error: "no user 9" })
        // The middleware answers itself: the handler never runs.
        const anonymous = await server.send({ method: "GET", path: "/users/2" })
        assert.strictEqual(anonymous.status, 401)
        assert.deepStrictEqual(anonymous.json, { error: "sign in first" })

        const listed = await server.send(createRoute({ method: "GET", path: "/users", handler: "listUsers" }))
        assert.strictEqual(listed.status, 201)
        assert.strictEqual((await server.send({ method: "GET", path: "/users" })).json.length, 2)

        const removed = await server.send({ method: "DELETE", path: `/v1/routing/${created.json.id}`, headers: admin })
        assert.strictEqual(removed.status, 204)
        const gone = await server.send({ method: "GET", path: "/users/2", headers: { authorization: "Bearer x" } })
        assert.strictEqual(gone.status, 404)
        assert.strictEqual(gone.text, "404 Not Found") // Hono's own: the router handed it on
      } finally {
        await server.close()
      }
    })
  })
})
