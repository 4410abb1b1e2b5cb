/**
 * An Express 5 host with the registry mounted in one step (`route-registry/express`): the routing API and the router
 * serving the stored routes with the host's own Express handlers, a small users API. Create a route through the API
 * and it serves at once:
 *
 *   curl -X POST localhost:3001/v1/routing -H "authorization: Bearer $TOKEN" -H "content-type: application/json" \
 *     -d '{"method":"GET","path":"/users/:id","middleware":["auth"],"handler":"showUser"}'
 *   curl localhost:3001/users/1 -H "authorization: Bearer anything"
 *
 *   npx tsx examples/express.ts          # PORT (default 3001), HOST, ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS
 */
import type { Layer } from "effect"
import express from "express"
import type * as Authenticator from "route-registry/Authenticator"
import * as RR from "route-registry/express"
import type * as RouteRepository from "route-registry/RouteRepository"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import * as Env from "./env.js"

const users: ReadonlyArray<{ readonly id: string; readonly name: string }> = [
  { id: "1", name: "Ada Lovelace" },
  { id: "2", name: "Grace Hopper" }
]

/** The host's functions for the stored routes, by the names routes give them: plain Express handlers. */
export const handlers: RR.Options["handlers"] = {
  listUsers: (_req, res) => void res.json(users),
  showUser: (req, res) => {
    const user = users.find((user) => user.id === req.params.id)
    if (user === undefined) res.status(404).json({ error: `no user ${req.params.id}` })
    else res.json(user)
  }
}

export const middleware: RR.Options["middleware"] = {
  // Answers 401 itself, so the handler never runs, when the request carries no credentials.
  auth: (req, res, next) => {
    if (req.headers.authorization === undefined) return void res.status(401).json({ error: "sign in first" })
    next()
  }
}

/** The host's app with the registry mounted over `services` (a store and an authenticator); `dispose` releases them. */
export const makeApp = async (
  services: Layer.Layer<RouteRepository.RouteRepository | Authenticator.Authenticator, unknown>,
  options?: RoutingHandler.Options
): Promise<{ readonly app: express.Express; readonly dispose: () => Promise<void> }> => {
  const registry = RR.routeRegistry({ ...options, authenticator: services, store: services, handlers, middleware })
  // Built now: a bad configuration fails here, at start-up, not on the first request.
  await registry.ready
  const app = express()
  app.get("/health", (_req, res) => void res.json({ status: "ok" }))
  app.post("/echo", express.json(), (req, res) => void res.json(req.body))
  // After the host's own routes. What no stored route serves goes on to Express's 404, errors to its error handling.
  app.use(registry)
  return { app, dispose: registry.close }
}

if (Env.isMain(import.meta.url)) {
  const timeouts = Env.timeouts()
  const { app, dispose } = await makeApp(Env.services(), { bodyTimeoutMillis: timeouts.bodyMillis })
  Env.serve(app, 3001, dispose, timeouts)
}
