import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { AddressInfo } from "node:net"
import * as RouteRepository from "route-registry/RouteRepository"
import { buildApp } from "../../examples/fastify.js"
import { type Adapter, fetchFrom } from "../utils/adapters.js"
import { ADMIN, createGetContract, failureContract, post, tokens } from "../utils/httpContract.js"
import { failingAfterStart } from "../utils/routerHost.js"

const fastify: Adapter = {
  name: "examples/fastify",
  start: async (services, options) => {
    const app = await buildApp(services, options)
    await app.listen({ port: 0, host: "127.0.0.1" })
    const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    // close() runs the plugin's onClose hook, which disposes the API's services.
    return { send: fetchFrom(origin), fetch: globalThis.fetch, origin, close: () => app.close() }
  }
}

describe("examples/fastify", () => {
  // The whole contract runs over the integration itself (test/Fastify.test.ts); the example changes only how requests
  // reach it and what reads their bodies.
  describe("the routing API as a Fastify plugin: create and get, authentication, the body and its limits", () =>
    createGetContract(fastify, RouteRepository.layerMemory))
  describe("failures", () =>
    failureContract({ ...fastify, start: (services, options) => fastify.start(failingAfterStart(services), options) }))

  it("the host's own routes keep Fastify's JSON parser, and other paths get Fastify's 404", async () => {
    const server = await fastify.start(Layer.merge(RouteRepository.layerMemory, tokens))
    onTestFinished(() => server.close())
    const health = await server.send({ method: "GET", path: "/health" })
    assert.strictEqual(health.status, 200)
    assert.deepStrictEqual(health.json, { status: "ok" })
    // Outside the encapsulated plugin the parsers are Fastify's: JSON is parsed, unknown types refused by Fastify.
    assert.deepStrictEqual((await server.send({ ...post({ a: [1, 2] }), path: "/echo" })).json, { a: [1, 2] })
    const xml = await server.send({ ...post("<a/>", { "content-type": "application/xml" }), path: "/echo" })
    assert.strictEqual(xml.status, 415)
    assert.strictEqual(xml.json.code, "FST_ERR_CTP_INVALID_MEDIA_TYPE")
    for (const path of ["/nope", "/v1/routings"]) {
      const response = await server.send({ method: "GET", path, headers: { authorization: `Bearer ${ADMIN}` } })
      assert.strictEqual(response.json.message, `Route GET:${path} not found`) // Fastify's own 404
    }
  })

  it("a path under /v1/routing/ that the API does not serve gets Fastify's own 404", async () => {
    const server = await fastify.start(Layer.merge(RouteRepository.layerMemory, tokens))
    onTestFinished(() => server.close())
    const response = await server.send({ method: "GET", path: "/v1/routing/a/b" })
    assert.strictEqual(response.json.message, "Route GET:/v1/routing/a/b not found")
  })

  it("close() disposes the API's services", async () => {
    let released = false
    const services = Layer.mergeAll(
      RouteRepository.layerMemory,
      tokens,
      Layer.scopedDiscard(Effect.addFinalizer(() => Effect.sync(() => (released = true))))
    )
    const server = await fastify.start(services)
    assert.isFalse(released)
    await server.close()
    assert.isTrue(released)
  })
})
