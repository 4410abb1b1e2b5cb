/**
 * A Fastify 5 host with the registry registered as a plugin (`route-registry/fastify`): the routing API and the
 * router serving the stored routes with the host's own Fastify handlers and pre-handlers.
 *
 *   curl -X POST localhost:3002/v1/routing -H "authorization: Bearer $TOKEN" -H "content-type: application/json" \
 *     -d '{"method":"GET","path":"/users/:id","middleware":["auth"],"handler":"showUser"}'
 *   curl localhost:3002/users/1 -H "authorization: Bearer anything"
 *
 *   npx tsx examples/fastify.ts          # PORT (default 3002), HOST, ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS
 */
import type { Layer } from "effect"
import Fastify from "fastify"
import type { FastifyInstance } from "fastify"
import type * as Authenticator from "route-registry/Authenticator"
import routeRegistry, * as RR from "route-registry/fastify"
import type * as RouteRepository from "route-registry/RouteRepository"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import * as Env from "./env.js"

const users: ReadonlyArray<{ readonly id: string; readonly name: string }> = [
  { id: "1", name: "Ada Lovelace" },
  { id: "2", name: "Grace Hopper" }
]

/** The host's functions for the stored routes: Fastify handlers and pre-handlers. */
export const handlers: RR.Options["handlers"] = {
  listUsers: async () => users,
  showUser: async (request, reply) => {
    const { id } = request.params as { readonly id: string }
    return users.find((user) => user.id === id) ?? reply.code(404).send({ error: `no user ${id}` })
  }
}

export const middleware: RR.Options["middleware"] = {
  // Sends 401 itself, which stops the chain, when the request carries no credentials.
  auth: async (request, reply) => {
    if (request.headers.authorization === undefined) await reply.code(401).send({ error: "sign in first" })
  }
}

/** The host's app with the plugin registered over `services`; `close()` also releases them. */
export const buildApp = async (
  services: Layer.Layer<RouteRepository.RouteRepository | Authenticator.Authenticator, unknown>,
  options?: RoutingHandler.Options
): Promise<FastifyInstance> => {
  const app = Fastify()
  app.get("/health", async () => ({ status: "ok" }))
  app.post("/echo", async (request) => request.body)
  await app.register(routeRegistry, { ...options, authenticator: services, store: services, handlers, middleware })
  return app
}

if (Env.isMain(import.meta.url)) {
  const app = await buildApp(Env.services())
  const address = await app.listen({ port: Env.port(3002), host: Env.host() })
  console.log(`listening on ${address}`)
  Env.onShutdown(() => app.close())
}
