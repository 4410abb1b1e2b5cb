/**
 * The framework integrations serving the router scenario: each framework's app with the registry mounted in one step,
 * the scenario's routes stored through the app's own routing API once it listens, and the same trivial JSON handler
 * as the native peers (`bench/peers/native-routers.ts`), written in the framework's idiom.
 */
import { getRequestListener } from "@hono/node-server"
import { Redacted } from "effect"
import express from "express"
import Fastify from "fastify"
import { Hono } from "hono"
import * as Http from "node:http"
import * as Authenticator from "route-registry/Authenticator"
import * as ExpressRegistry from "route-registry/express"
import fastifyRegistry, * as FastifyRegistry from "route-registry/fastify"
import * as HonoRegistry from "route-registry/hono"
import type { Options, Started } from "../peers/shared.js"
import { closeServer, listen, runMain } from "../peers/shared.js"
import * as Scenario from "../router.js"

const authenticator = (options: Options) =>
  Authenticator.layerStaticTokens(
    options.tokens.map(({ id, scopes, token }) => ({
      token: Redacted.make(token),
      scopes,
      ...(id === undefined ? {} : { id })
    }))
  )

/** A function for each handler name of the scenario's routes, as the native peers register one for each route. */
const handlers = <F>(options: Options, make: (name: string) => F): Record<string, F> =>
  Object.fromEntries(
    Scenario.routes(options.seed ?? 0, options.routeSet).map((route) => [route.handler, make(route.handler)])
  )

/** Once listening on `port`, stores the scenario's routes through the app's own API. */
const storing = async (options: Options, port: number, close: () => Promise<void>): Promise<Started> => {
  const token = options.tokens.find((token) => token.scopes.includes("routes:write"))?.token
  if (token === undefined) throw new Error("the routes are stored through the API: give an admin token")
  const origin = `http://${options.host ?? "127.0.0.1"}:${port}`
  return { port, seeded: await Scenario.storeThroughApi(origin, token, options.seed ?? 0, options.routeSet), close }
}

export const fastify = async (options: Options): Promise<Started> => {
  const app = Fastify()
  await app.register(fastifyRegistry, {
    authenticator: authenticator(options),
    handlers: handlers<FastifyRegistry.Handler>(
      options,
      (name) => (request, reply) =>
        reply.type("application/json").send(Scenario.answer(name, request.params as Record<string, string>))
    )
  })
  await app.listen({ port: options.port ?? 0, host: options.host ?? "127.0.0.1" })
  return storing(options, (app.server.address() as { readonly port: number }).port, async () => {
    app.server.closeAllConnections()
    await app.close()
  })
}

export const expressApp = async (options: Options): Promise<Started> => {
  const app = express()
  const registry = ExpressRegistry.routeRegistry({
    authenticator: authenticator(options),
    handlers: handlers<ExpressRegistry.Handler>(options, (name) => (req, res) => {
      res.type("application/json").send(Scenario.answer(name, req.params as Record<string, string>))
    })
  })
  await registry.ready
  app.use(registry)
  const server = Http.createServer(app)
  return storing(options, await listen(server, options), async () => {
    await closeServer(server)
    await registry.close()
  })
}

export const hono = async (options: Options): Promise<Started> => {
  const registry = HonoRegistry.routeRegistry({
    authenticator: authenticator(options),
    handlers: handlers<HonoRegistry.Handler>(
      options,
      (name) => (c) => c.body(Scenario.answer(name, c.req.param()), 200, { "content-type": "application/json" })
    )
  })
  await registry.ready
  const app = new Hono().route("/", registry)
  const server = Http.createServer(getRequestListener(app.fetch, { overrideGlobalObjects: false }))
  return storing(options, await listen(server, options), async () => {
    await closeServer(server)
    await registry.close()
  })
}

const entries = { fastify, express: expressApp, hono }
runMain(import.meta.url, (options) => entries[(process.env.FRAMEWORK ?? "fastify") as keyof typeof entries](options))
