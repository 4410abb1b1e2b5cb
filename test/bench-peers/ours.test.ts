/**
 * The benchmark's entries that serve the library's adapters pass the contract too. An entry that serves one of them
 * on the transport and store its own test file runs the whole contract on (AdminListener on node:http, AdminHttpApp
 * on NodeHttpServer, each over the memory store) runs the rows of create and get, which the benchmark sends and which
 * show the entry passes its options and services on; the other rows would run the same code on the same store again.
 */
import { describe } from "@effect/vitest"
import * as RouteRepository from "route-registry/RouteRepository"
import * as OursHttpApp from "../../bench/ours/http-app.js"
import * as OursNodeListener from "../../bench/ours/node-listener.js"
import * as OursWebHandler from "../../bench/ours/web-handler.js"
import { asAdapter, type Start } from "../utils/benchPeers.js"
import { createGetContract, routesContract } from "../utils/httpContract.js"

const oursAsTested: ReadonlyArray<readonly [string, Start]> = [
  ["ours: AdminListener", OursNodeListener.start],
  ["ours: AdminHttpApp", OursHttpApp.start]
]

describe("benchmark servers", () => {
  for (const [name, start] of oursAsTested) {
    describe(name, () => createGetContract(asAdapter(name, start), RouteRepository.layerMemory))
  }
  // A transport no other test serves an adapter on, built as the benchmark builds it (its own tokens, no route
  // table): all of the suite the peers pass.
  const webHandler = "ours: AdminWebHandler on @hono/node-server"
  describe(webHandler, () => routesContract(asAdapter(webHandler, OursWebHandler.start), RouteRepository.layerMemory))
})
