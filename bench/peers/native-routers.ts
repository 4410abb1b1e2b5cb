/**
 * Express 5 and Hono 4 serving the router scenario's routes registered natively at start-up, as their users write
 * them, with the trivial JSON handler (the Fastify peer is `fastify-router.ts`).
 */
import { getRequestListener } from "@hono/node-server"
import express from "express"
import { Hono } from "hono"
import * as Http from "node:http"
import * as Scenario from "../router.js"
import type { Options, Started } from "./shared.js"
import { closeServer, listen, runMain } from "./shared.js"

const serving = async (server: Http.Server, options: Options): Promise<Started> => {
  const routes = Scenario.routes(options.seed ?? 0, options.routeSet)
  return {
    port: await listen(server, options),
    // It stores no routes through an API: the route table is the framework's own.
    seeded: routes.map((_, i) => String(i)),
    close: () => closeServer(server)
  }
}

export const expressApp = (options: Options): Promise<Started> => {
  const app = express()
  for (const route of Scenario.routes(options.seed ?? 0, options.routeSet)) {
    const name = route.handler
    app[route.method.toLowerCase() as "get"](route.path, (req, res) => {
      res.type("application/json").send(Scenario.answer(name, req.params as Record<string, string>))
    })
  }
  return serving(Http.createServer(app), options)
}

export const hono = (options: Options): Promise<Started> => {
  const app = new Hono()
  for (const route of Scenario.routes(options.seed ?? 0, options.routeSet)) {
    const name = route.handler
    app.on(
      route.method,
      route.path,
      (c) => c.body(Scenario.answer(name, c.req.param()), 200, { "content-type": "application/json" })
    )
  }
  return serving(Http.createServer(getRequestListener(app.fetch, { overrideGlobalObjects: false })), options)
}

const entries = { express: expressApp, hono }
runMain(import.meta.url, (options) => entries[(process.env.FRAMEWORK ?? "express") as keyof typeof entries](options))
