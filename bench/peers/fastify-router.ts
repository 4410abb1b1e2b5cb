/**
 * Fastify 5 serving the router scenario's routes, registered at start-up as its users write them: one route each,
 * with a response schema (fast-json-stringify) for the trivial JSON handler.
 */
import Fastify from "fastify"
import * as Scenario from "../router.js"
import type { Options, Started } from "./shared.js"
import { runMain } from "./shared.js"

const schema = {
  response: {
    200: {
      type: "object",
      properties: {
        handler: { type: "string" },
        params: { type: "object", additionalProperties: { type: "string" } }
      },
      required: ["handler", "params"]
    }
  }
} as const

export const start = async (options: Options): Promise<Started> => {
  const fastify = Fastify()
  const routes = Scenario.routes(options.seed ?? 0, options.routeSet)
  for (const route of routes) {
    const handler = route.handler
    fastify.route({
      method: route.method,
      url: route.path,
      schema,
      handler: (request) => ({ handler, params: request.params })
    })
  }
  await fastify.listen({ port: options.port ?? 0, host: options.host ?? "127.0.0.1" })
  const address = fastify.server.address()
  return {
    port: typeof address === "object" && address !== null ? address.port : 0,
    // It stores no routes through an API: the route table is Fastify's own.
    seeded: routes.map((_, i) => String(i)),
    close: async () => {
      fastify.server.closeAllConnections()
      await fastify.close()
    }
  }
}

runMain(import.meta.url, start)
