/**
 * Mounting the routing API in an Express 5 app, and the router serving the stored routes with the host's functions:
 * a small users API. Create a route through the API and it serves at once:
 *
 *   curl -X POST localhost:3001/v1/routing -H "authorization: Bearer $TOKEN" -H "content-type: application/json" \
 *     -d '{"method":"GET","path":"/users/:id","middleware":["auth"],"handler":"showUser"}'
 *   curl localhost:3001/users/1 -H "authorization: Bearer anything"
 *
 *   npx tsx examples/express.ts          # PORT (default 3001), HOST, ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import express from "express"
import type { ServerResponse } from "node:http"
import * as NodeListener from "route-registry/NodeListener"
import * as NodeRouter from "route-registry/NodeRouter"
import * as RouteTable from "route-registry/RouteTable"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import * as Env from "./env.js"

const users: ReadonlyArray<{ readonly id: string; readonly name: string }> = [
  { id: "1", name: "Ada Lovelace" },
  { id: "2", name: "Grace Hopper" }
]

const sendJson = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))
}

/** The host's functions for the stored routes, by the names routes give them. */
export const functions: NodeRouter.Functions = {
  handlers: {
    listUsers: (_req, res) => sendJson(res, 200, users),
    showUser: (req, res) => {
      const { id } = NodeRouter.matchOf(req)!.params
      const user = users.find((user) => user.id === id)
      if (user === undefined) sendJson(res, 404, { error: `no user ${id}` })
      else sendJson(res, 200, user)
    }
  },
  middleware: {
    // Answers 401 itself, so the handler never runs, when the request carries no credentials.
    auth: (req, res, next) => {
      if (req.headers.authorization === undefined) return sendJson(res, 401, { error: "sign in first" })
      next()
    }
  }
}

/**
 * The host's app with the routing API and the router mounted over one runtime, so both share one store and one
 * table; `dispose` releases the services once the server is closed.
 */
export const makeApp = async <E>(
  services: Layer.Layer<RoutingHandler.Services, E>,
  options?: NodeListener.Options
): Promise<{ readonly app: express.Express; readonly dispose: () => Promise<void> }> => {
  // The table over the store, and the store decorated so every change made through the API is in the table before
  // it is acknowledged. Built now: a bad configuration fails here, at start-up, not on the first request.
  const runtime = ManagedRuntime.make(RouteTable.layer.pipe(Layer.provideMerge(services)))
  const [routing, router] = await runtime.runPromise(
    Effect.all([
      NodeListener.make(options),
      NodeRouter.make(functions, { bodyTimeoutMillis: options?.bodyTimeoutMillis })
    ])
  ).catch(async (error: unknown) => {
    await runtime.dispose()
    throw error
  })
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
  // The stored routes, after the host's own. What no stored route serves goes on to Express's 404, and errors of
  // the functions to Express's error handling.
  app.use(router)
  return { app, dispose: () => runtime.dispose() }
}

if (Env.isMain(import.meta.url)) {
  const timeouts = Env.timeouts()
  const { app, dispose } = await makeApp(Env.services(), { bodyTimeoutMillis: timeouts.bodyMillis })
  Env.serve(app, 3001, dispose, timeouts)
}
