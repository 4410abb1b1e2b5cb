import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Layer } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import { makeApp } from "../../examples/express.js"
import { type Adapter, serveNode } from "../utils/adapters.js"
import { ADMIN, createGetContract, failingStore, failureContract, post, tokens } from "../utils/httpContract.js"
import { failingAfterStart } from "../utils/routerHost.js"
import { stores } from "../utils/stores.js"
import { servesUsers } from "./usersHost.js"

const express: Adapter = {
  name: "examples/express",
  start: async (services, options) => {
    const { app, dispose } = await makeApp(services, options)
    return serveNode(app, dispose)
  }
}

const expressStoreFailingLater: Adapter = {
  ...express,
  start: (services, options) => express.start(failingAfterStart(services), options)
}

describe("examples/express", () => {
  // The whole contract runs over the integration itself (test/Express.test.ts); the example changes only how requests
  // reach it and what reads their bodies.
  describe("the routing API mounted in Express: create and get, authentication, the body and its limits", () =>
    createGetContract(express, RouteRepository.layerMemory))
  describe("failures of the store after start-up", () => failureContract(expressStoreFailingLater))

  it("does not start over a store it cannot load the table from", async () => {
    const error = await makeApp(Layer.merge(failingStore("unavailable"), tokens)).then(() => "started", String)
    assert.include(error, "StoreUnavailable")
  })

  it("the host's own routes keep working, express.json() included, and other paths fall through to Express", async () => {
    const server = await express.start(Layer.merge(RouteRepository.layerMemory, tokens))
    onTestFinished(() => server.close())
    const health = await server.send({ method: "GET", path: "/health" })
    assert.strictEqual(health.status, 200)
    assert.deepStrictEqual(health.json, { status: "ok" })
    const echo = await server.send({ ...post({ a: [1, 2] }), path: "/echo" })
    assert.deepStrictEqual(echo.json, { a: [1, 2] })
    for (const path of ["/nope", "/v1/routings", "/v1/routing/a/b"]) {
      const response = await server.send({ method: "GET", path, headers: { authorization: `Bearer ${ADMIN}` } })
      assert.strictEqual(response.status, 404, path)
      assert.include(response.text, "Cannot GET", path) // Express's own 404 page
    }
  })

  describe.each(stores)("the router on the %s", (_name, store) => {
    it("a route created through the API is served by the host's functions at once, until it is deleted", () =>
      servesUsers(express, store, (response) => {
        assert.include(response.text, "Cannot GET") // Express's own 404: the router handed it on
      }))
  })
})
