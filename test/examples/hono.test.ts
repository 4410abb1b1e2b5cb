import { assert, describe, it } from "@effect/vitest"
import { getRequestListener } from "@hono/node-server"
import { Layer } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import { makeApp } from "../../examples/hono.js"
import { type Adapter, serveNode } from "../utils/adapters.js"
import { ADMIN, createGetContract, failingStore, failureContract, tokens } from "../utils/httpContract.js"
import { failingAfterStart } from "../utils/routerHost.js"
import { stores } from "../utils/stores.js"
import { servesUsers } from "./usersHost.js"

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
  // The whole contract runs over the integration itself (test/Hono.test.ts); the example changes only how requests
  // reach it and what reads their bodies.
  describe("the routing API mounted in Hono: create and get, authentication, the body and its limits", () =>
    createGetContract(hono, RouteRepository.layerMemory))
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
    it("a route created through the API is served by the host's functions at once, until it is deleted", () =>
      servesUsers(hono, store, (response) => {
        assert.strictEqual(response.text, "404 Not Found") // Hono's own: the router handed it on
      }))
  })
})
