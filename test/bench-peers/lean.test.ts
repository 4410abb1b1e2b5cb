/**
 * The benchmark's lean peers serve the routes API whole — create, get, list with its search, update, delete,
 * versions and the change log (history, restore, dry runs, `Registry-Revision`) — and pass all of that suite, and the
 * rows a 1 KiB body limit changes (docs/performance.md says what a registry serves beyond it).
 */
import { describe } from "@effect/vitest"
import * as RouteRepository from "route-registry/RouteRepository"
import * as FastifyPlain from "../../bench/peers/fastify-plain.js"
import * as LeanNode from "../../bench/peers/lean-node.js"
import { asAdapter, type Start } from "../utils/benchPeers.js"
import { limitContract, nodeSocketContract, routesContract } from "../utils/httpContract.js"

const lean: ReadonlyArray<readonly [string, Start]> = [
  ["lean node:http", LeanNode.start],
  ["plain Fastify", FastifyPlain.start]
]

describe("benchmark servers", () => {
  for (const [name, start] of lean) {
    describe(name, () => routesContract(asAdapter(name, start), RouteRepository.layerMemory))
    describe(`${name}, 1 KiB body limit`, () =>
      limitContract(asAdapter(name, start), RouteRepository.layerMemory, { maxBodyBytes: 1024 }))
  }
  // Written on node:http directly, it also honours what only a Node socket shows (Fastify writes its own status line).
  describe("lean node:http on a Node socket", () => nodeSocketContract(asAdapter("lean node:http", LeanNode.start)))
})
