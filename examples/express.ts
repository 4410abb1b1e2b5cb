/**
 * Mounting the routing API in an Express 5 app.
 *
 *   npx tsx examples/express.ts          # PORT (default 3001), HOST, ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS
 */
import type { Layer } from "effect"
import express from "express"
import * as NodeListener from "route-registry/NodeListener"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import * as Env from "./env.js"

/** The host's app with the routing API mounted; `dispose` releases the API's services once the server is closed. */
export const makeApp = async <E>(
  services: Layer.Layer<RoutingHandler.Services, E>,
  options?: NodeListener.Options
): Promise<{ readonly app: express.Express; readonly dispose: () => Promise<void> }> => {
  // Builds the services now: a bad configuration fails here, at start-up, not on the first request.
  const routing = await NodeListener.fromLayer(services, options)
  const app = express()
  // Before any body parser: the API reads the raw body itself, to enforce its size limit and answer 413 and 415.
  // Express passes `next`, so every path outside /v1/routing goes on to the routes below.
  app.use(routing)
  app.use(express.json())
  app.get("/health", (_req, res) => {
    res.json({ status: "ok" })
  })
  app.post("/echo", (req, res) => {
    res.json(req.body)
  })
  return { app, dispose: routing.dispose }
}

if (Env.isMain(import.meta.url)) {
  const { app, dispose } = await makeApp(Env.services())
  Env.serve(app, 3001, dispose)
}
