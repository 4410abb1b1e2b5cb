/**
 * The benchmark's servers pass the same HTTP contract suite as the library, so the comparison is between servers
 * that do the same work: the peers (each over its own store: the suite's store layer is ignored), the Postgres
 * peer and the library's Node listener on the test database, and the entries that serve the library's adapters.
 *
 * An entry that serves one of the library's adapters on the transport and store its own test file runs the whole
 * contract on (AdminListener on node:http, AdminHttpApp on NodeHttpServer, each over the memory store; AdminListener
 * over Postgres) runs the rows of create and get, which the benchmark sends and which show the entry passes its
 * options and services on; the other rows would run the same code on the same store again.
 */
import { afterAll, assert, describe, it, onTestFinished } from "@effect/vitest"
import Pg from "pg"
import * as RouteRepository from "route-registry/RouteRepository"
import * as OursHttpApp from "../bench/ours/http-app.js"
import * as OursIntegrations from "../bench/ours/integrations.js"
import * as OursNodeListener from "../bench/ours/node-listener.js"
import * as OursRouter from "../bench/ours/router.js"
import * as OursWebHandler from "../bench/ours/web-handler.js"
import * as EffectHttpApi from "../bench/peers/effect-httpapi.js"
import * as Express from "../bench/peers/express.js"
import * as FastifyPg from "../bench/peers/fastify-pg.js"
import * as FastifyPlain from "../bench/peers/fastify-plain.js"
import * as FastifyRouter from "../bench/peers/fastify-router.js"
import * as Fastify from "../bench/peers/fastify.js"
import * as FindMyWayRouter from "../bench/peers/find-my-way-router.js"
import * as Hono from "../bench/peers/hono.js"
import * as LeanNode from "../bench/peers/lean-node.js"
import * as NativeRouters from "../bench/peers/native-routers.js"
import * as RawNode from "../bench/peers/raw-node.js"
import type { Database, Options, Started } from "../bench/peers/shared.js"
import * as RouterScenario from "../bench/router.js"
import type { Adapter } from "./utils/adapters.js"
import { fetchFrom } from "./utils/adapters.js"
import { ADMIN, createGetContract, nodeSocketContract, peerContract, READER, WRITER } from "./utils/httpContract.js"
import * as TestDatabase from "./utils/TestDatabase.js"

const tokens: Options["tokens"] = [
  { token: ADMIN, scopes: ["routes:read", "routes:write"] },
  { token: READER, scopes: ["routes:read"] },
  { token: WRITER, scopes: ["routes:write"] }
]

const asAdapter = (
  name: string,
  start: (options: Options) => Promise<Started>,
  database?: () => Database
): Adapter => ({
  name,
  start: async (_services, options) => {
    const server = await start({
      tokens,
      maxBodyBytes: options?.maxBodyBytes,
      bodyTimeoutMillis: options?.bodyTimeoutMillis,
      database: database?.()
    })
    const origin = `http://127.0.0.1:${server.port}`
    return { send: fetchFrom(origin), fetch: globalThis.fetch, origin, close: server.close }
  }
})

// These peers serve create and get only, so they run that part of the suite.
const peers: ReadonlyArray<readonly [string, (options: Options) => Promise<Started>]> = [
  ["raw node:http", RawNode.start],
  ["Fastify", Fastify.start],
  ["Express", Express.start],
  ["Hono", Hono.start],
  ["stock Effect HttpApi", EffectHttpApi.start]
]
// The lean peers serve the whole contract as it stood before the change log, the search, prefix owners and match
// (docs/performance.md says what that leaves out of the comparison), and run all of that suite.
const lean: ReadonlyArray<readonly [string, (options: Options) => Promise<Started>]> = [
  ["lean node:http", LeanNode.start],
  ["plain Fastify", FastifyPlain.start]
]
// Served as their own tests serve them: the rows of create and get.
const oursAsTested: ReadonlyArray<readonly [string, (options: Options) => Promise<Started>]> = [
  ["ours: AdminListener", OursNodeListener.start],
  ["ours: AdminHttpApp", OursHttpApp.start]
]
// A transport no other test serves an adapter on: all of the suite.
const ours: ReadonlyArray<readonly [string, (options: Options) => Promise<Started>]> = [
  ["ours: AdminWebHandler on @hono/node-server", OursWebHandler.start]
]

describe("benchmark servers", () => {
  for (const [name, start] of [...peers, ...oursAsTested]) {
    describe(name, () => createGetContract(asAdapter(name, start), RouteRepository.layerMemory))
  }
  for (const [name, start] of lean) {
    describe(name, () => peerContract(asAdapter(name, start), RouteRepository.layerMemory))
    describe(`${name}, 1 KiB body limit`, () =>
      peerContract(asAdapter(name, start), RouteRepository.layerMemory, { maxBodyBytes: 1024 }))
  }
  // Built as the benchmark builds it (its own tokens, no route table): it serves the rules the peers serve.
  for (const [name, start] of ours) {
    describe(name, () => peerContract(asAdapter(name, start), RouteRepository.layerMemory))
  }
  // Written on node:http directly, it also honours what only a Node socket shows (Fastify writes its own status line).
  describe("lean node:http on a Node socket", () => nodeSocketContract(asAdapter("lean node:http", LeanNode.start)))
  describe("Fastify, 1 KiB body limit", () =>
    createGetContract(asAdapter("Fastify", Fastify.start), RouteRepository.layerMemory, { maxBodyBytes: 1024 }))

  describe("on Postgres", () => {
    let pool: Pg.Pool | undefined
    const database = () => (pool ??= new Pg.Pool({ connectionString: TestDatabase.url, max: 10 }))
    afterAll(() => pool?.end())
    // A fresh table for each server, dropped with its migrations table when the server closes.
    const onFreshTable = (start: (options: Options) => Promise<Started>) => async (options: Options) => {
      const db = { pool: database(), table: TestDatabase.freshTable() }
      const server = await start({ ...options, database: db })
      return {
        ...server,
        close: async () => {
          await server.close()
          await db.pool.query(`DROP TABLE IF EXISTS "${db.table}", "${db.table}_migrations"`)
        }
      }
    }
    describe("Fastify + pg.Pool", () =>
      createGetContract(asAdapter("Fastify + pg", onFreshTable(FastifyPg.start)), RouteRepository.layerMemory))
    describe("ours: AdminListener", () =>
      createGetContract(
        asAdapter("AdminListener + pg", onFreshTable(OursNodeListener.start)),
        RouteRepository.layerMemory
      ))
  })
})

describe("the router scenario's servers answer alike", () => {
  for (
    const [name, start] of [
      ["ours: RouterListener", OursRouter.start],
      ["Fastify", FastifyRouter.start],
      ["node:http + find-my-way", FindMyWayRouter.start],
      ["ours: Fastify integration", OursIntegrations.fastify],
      ["Express", NativeRouters.expressApp],
      ["ours: Express integration", OursIntegrations.expressApp],
      ["Hono", NativeRouters.hono],
      ["ours: Hono integration", OursIntegrations.hono]
    ] as const
  ) {
    it(name, async () => {
      const server = await start({ tokens, seed: 1000 })
      onTestFinished(() => server.close())
      await RouterScenario.check(name, `http://127.0.0.1:${server.port}`, 1000)
    })
  }
})

describe("the GitHub router scenario's servers answer alike", () => {
  // Express's and Hono's routers cannot express GitHub's `/compare/:base...:head`: they serve the request with
  // `/compare/:basehead`, so they are measured on the REST set only (docs/performance.md).
  for (const [name, start] of [["Express", NativeRouters.expressApp], ["Hono", NativeRouters.hono]] as const) {
    it(`${name} natively answers the mixed-segment route otherwise, so it is left out of this scenario`, async () => {
      const server = await start({ tokens, seed: Infinity, routeSet: "github" })
      onTestFinished(() => server.close())
      const answered = await fetch(`http://127.0.0.1:${server.port}/repos/o/r/compare/a...b`)
      assert.include(await answered.text(), "\"basehead\":\"a...b\"")
    })
  }

  const count = RouterScenario.routes(Infinity, "github").length
  for (
    const [name, start] of [
      ["ours: RouterListener", OursRouter.start],
      ["node:http + find-my-way", FindMyWayRouter.start],
      ["Fastify", FastifyRouter.start],
      ["ours: Fastify integration", OursIntegrations.fastify],
      ["ours: Express integration", OursIntegrations.expressApp],
      ["ours: Hono integration", OursIntegrations.hono]
    ] as const
  ) {
    it(name, async () => {
      const server = await start({ tokens, seed: count, routeSet: "github" })
      onTestFinished(() => server.close())
      await RouterScenario.check(name, `http://127.0.0.1:${server.port}`, count, "github")
    })
  }
})
