import * as HttpServer from "@effect/platform/HttpServer"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import { ServerLive } from "../../examples/effect-router.js"
import { type Adapter, fetchFrom } from "../utils/adapters.js"
import { ADMIN, failureContract, httpContract, tokens } from "../utils/httpContract.js"

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

describe("examples/effect-router", () => {
  describe("the routing API's router beside the host's", () => httpContract(effectRouter, RouteRepository.layerMemory))
  describe("failures", () => failureContract(effectRouter))

  it("the host's own routes keep working, and other paths get the server's 404", async () => {
    const server = await effectRouter.start(Layer.merge(RouteRepository.layerMemory, tokens))
    try {
      const health = await server.send({ method: "GET", path: "/health" })
      assert.strictEqual(health.status, 200)
      assert.deepStrictEqual(health.json, { status: "ok" })
      for (const path of ["/nope", "/v1/routings", "/v1/routing/a/b"]) {
        const response = await server.send({ method: "GET", path, headers: { authorization: `Bearer ${ADMIN}` } })
        assert.strictEqual(response.status, 404, path)
        assert.strictEqual(response.text, "", path) // the platform's empty 404, not a problem document
      }
    } finally {
      await server.close()
    }
  })
})
