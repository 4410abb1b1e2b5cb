/**
 * The router scenario's servers (bench/router.ts) answer every request of the scenario alike, so the benchmark
 * compares servers that do the same work.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import * as OursIntegrations from "../../bench/ours/integrations.js"
import * as OursRouter from "../../bench/ours/router.js"
import * as FastifyRouter from "../../bench/peers/fastify-router.js"
import * as FindMyWayRouter from "../../bench/peers/find-my-way-router.js"
import * as NativeRouters from "../../bench/peers/native-routers.js"
import * as RouterScenario from "../../bench/router.js"
import { tokens } from "../utils/benchPeers.js"

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
