/**
 * A Hono 4 host with the registry mounted as a sub-app (`route-registry/hono`), served on `@hono/node-server`: the
 * routing API and the router serving the stored routes with the host's own Hono handlers and middleware.
 *
 *   curl -X POST localhost:3003/v1/routing -H "authorization: Bearer $TOKEN" -H "content-type: application/json" \
 *     -d '{"method":"GET","path":"/users/:id","middleware":["auth"],"handler":"showUser"}'
 *   curl localhost:3003/users/1 -H "authorization: Bearer anything"
 *
 *   npx tsx examples/hono.ts             # PORT (default 3003), HOST, ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS
 */
import { getRequestListener } from "@hono/node-server"
import type { Layer } from "effect"
import { Hono } from "hono"
import type * as Authenticator from "route-registry/Authenticator"
import * as RR from "route-registry/hono"
import type * as RouteRepository from "route-registry/RouteRepository"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import * as Env from "./env.js"

const users: ReadonlyArray<{ readonly id: string; readonly name: string }> = [
  { id: "1", name: "Ada Lovelace" },
  { id: "2", name: "Grace Hopper" }
]

/** The host's functions for the stored routes: Hono handlers and middleware. */
export const handlers: RR.Options["handlers"] = {
  listUsers: (c) => c.json(users),
  showUser: (c) => {
    const user = users.find((user) => user.id === c.req.param("id"))
    return user === undefined ? c.json({ error: `no user ${c.req.param("id")}` }, 404) : c.json(user)
  }
}

export const middleware: RR.Options["middleware"] = {
  // Answers 401 itself, so the handler never runs, when the request carries no credentials.
  auth: async (
    c,
    next
  ) => (c.req.header("authorization") === undefined ? c.json({ error: "sign in first" }, 401) : next())
}

/** The host's app with the registry mounted over `services`; `dispose` releases them. */
export const makeApp = async (
  services: Layer.Layer<RouteRepository.RouteRepository | Authenticator.Authenticator, unknown>,
  options?: RoutingHandler.Options
): Promise<{ readonly app: Hono; readonly dispose: () => Promise<void> }> => {
  const registry = RR.routeRegistry({ ...options, authenticator: services, store: services, handlers, middleware })
  await registry.ready
  const app = new Hono()
  app.get("/health", (c) => c.json({ status: "ok" }))
  app.route("/", registry)
  return { app, dispose: registry.close }
}

if (Env.isMain(import.meta.url)) {
  const timeouts = Env.timeouts()
  const { app, dispose } = await makeApp(Env.services(), { bodyTimeoutMillis: timeouts.bodyMillis })
  // Hono's listener without replacing the process's Request and Response.
  Env.serve(getRequestListener(app.fetch, { overrideGlobalObjects: false }), 3003, dispose, timeouts)
}
