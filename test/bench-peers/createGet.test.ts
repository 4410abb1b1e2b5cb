/**
 * The benchmark's peers that serve create and get only pass those rows of the contract, and the rules they share
 * with every request: the comparison is between servers that do the same work. Each runs over its own store: the
 * suite's store layer is ignored.
 */
import { describe } from "@effect/vitest"
import * as RouteRepository from "route-registry/RouteRepository"
import * as EffectHttpApi from "../../bench/peers/effect-httpapi.js"
import * as Express from "../../bench/peers/express.js"
import * as Fastify from "../../bench/peers/fastify.js"
import * as Hono from "../../bench/peers/hono.js"
import * as RawNode from "../../bench/peers/raw-node.js"
import { asAdapter, type Start } from "../utils/benchPeers.js"
import { createGetContract, limitContract } from "../utils/httpContract.js"

const peers: ReadonlyArray<readonly [string, Start]> = [
  ["raw node:http", RawNode.start],
  ["Fastify", Fastify.start],
  ["Express", Express.start],
  ["Hono", Hono.start],
  ["stock Effect HttpApi", EffectHttpApi.start]
]

describe("benchmark servers", () => {
  for (const [name, start] of peers) {
    describe(name, () => createGetContract(asAdapter(name, start), RouteRepository.layerMemory))
  }
  describe("Fastify, 1 KiB body limit", () =>
    limitContract(asAdapter("Fastify", Fastify.start), RouteRepository.layerMemory, { maxBodyBytes: 1024 }, false))
})
