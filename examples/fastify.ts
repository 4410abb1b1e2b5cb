/**
 * Mounting the routing API in a Fastify 5 app, as a plugin.
 *
 *   npx tsx examples/fastify.ts          # PORT (default 3002), HOST, ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS
 */
import type { Layer } from "effect"
import Fastify from "fastify"
import type { FastifyInstance, FastifyPluginAsync, RouteHandlerMethod } from "fastify"
import * as NodeListener from "route-registry/NodeListener"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import * as Env from "./env.js"

export interface RoutingPluginOptions extends NodeListener.Options {
  readonly services: Layer.Layer<RoutingHandler.Services, unknown>
}

/**
 * Serves `/v1/routing` and everything under it. Registered without `fastify-plugin`, so it is encapsulated: the
 * parser changes below apply to its routes only, and the host's routes keep Fastify's JSON parser.
 */
export const routingPlugin: FastifyPluginAsync<RoutingPluginOptions> = async (fastify, { services, ...options }) => {
  const listener = await NodeListener.fromLayer(services, options)
  fastify.addHook("onClose", () => listener.dispose())
  // The API reads the raw body itself (size limit, 413, 415, malformed JSON): accept any content type and leave
  // the stream unread.
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser("*", (_request, _payload, done) => done(null))
  // Fastify steps aside: the listener answers on the raw response. A path under /v1/routing/ that the API does not
  // serve (such as /v1/routing/a/b) gets its 404 problem document, not Fastify's 404.
  const handler: RouteHandlerMethod = (request, reply) => {
    reply.hijack()
    listener(request.raw, reply.raw)
  }
  fastify.all("/v1/routing", handler)
  fastify.all("/v1/routing/*", handler)
}

/** The host's app with the plugin registered; `close()` also releases the API's services. */
export const buildApp = async (
  services: RoutingPluginOptions["services"],
  options?: NodeListener.Options
): Promise<FastifyInstance> => {
  const app = Fastify()
  await app.register(routingPlugin, { ...options, services })
  app.get("/health", () => ({ status: "ok" }))
  app.post("/echo", (request) => request.body)
  return app
}

if (Env.isMain(import.meta.url)) {
  const app = await buildApp(Env.services())
  const address = await app.listen({ port: Env.port(3002), host: Env.host() })
  console.log(`listening on ${address}`)
  Env.onShutdown(() => app.close())
}
