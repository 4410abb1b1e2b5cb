import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Layer } from "effect"
import * as AdminWebHandler from "route-registry/AdminWebHandler"
import * as RouteRepository from "route-registry/RouteRepository"
import { webHandler } from "./utils/adapters.js"
import { assertProblem, failureContract, httpContract, tokens } from "./utils/httpContract.js"
import { adapterStores } from "./utils/stores.js"

describe("AdminWebHandler", () => {
  for (const [name, store] of adapterStores) describe(name, () => httpContract(webHandler, store))
  describe("failures", () => failureContract(webHandler))

  it("answers 404 not_found outside /v1/routing", async () => {
    const handler = await AdminWebHandler.fromLayer(Layer.merge(RouteRepository.layerMemory, tokens))
    onTestFinished(() => handler.dispose())
    for (const path of ["/", "/v1/routing/a/b", "/v1/routings"]) {
      const response = await handler(new Request(`http://localhost${path}`))
      assert.strictEqual(response.status, 404)
      assertProblem({ status: 404, headers: response.headers, text: "", json: await response.json() }, "not_found")
    }
  })
})
