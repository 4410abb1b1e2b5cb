/**
 * The library's Node router on a plain `node:http` server, behind the routing API as a host mounts them (one
 * runtime, one store, one table), serving the router scenario's routes, stored through the API's store before it
 * listens, with a trivial JSON handler.
 */
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouterListener from "route-registry/RouterListener"
import * as RouteTable from "route-registry/RouteTable"
import type { Options, Started } from "../peers/shared.js"
import { listen, runMain } from "../peers/shared.js"
import * as Scenario from "../router.js"
import * as Services from "./services.js"

const handler: RouterListener.RouteFunction = (req, res) => {
  const { params, route } = RouterListener.matchOf(req)!
  const body = Scenario.answer(route.handler, params)
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const seed = (routes: ReadonlyArray<Scenario.RouterRoute>) =>
  Effect.flatMap(RouteRepository.RouteRepository, (repository) =>
    Effect.forEach(
      routes,
      (route) =>
        Effect.map(repository.create(Schema.decodeUnknownSync(Route.CreateRoute)(route)), (stored) => stored.id)
    )).pipe(Effect.orDie)

export const start = (options: Options): Promise<Started> => {
  const runtime = ManagedRuntime.make(RouteTable.layer.pipe(Layer.provideMerge(Services.layer(options))))
  return Services.started(runtime, async () => {
    const routes = Scenario.routes(options.seed ?? 0, options.routeSet)
    const functions: RouterListener.Functions = {
      handlers: Object.fromEntries(routes.map((route) => [route.handler, handler]))
    }
    const seeded = await runtime.runPromise(seed(routes))
    const [api, router] = await runtime.runPromise(
      Effect.all([Effect.orDie(AdminListener.make(Services.routing(options))), RouterListener.make(functions)])
    )
    const server = Http.createServer((req, res) => api(req, res, () => router(req, res)))
    return { server, port: await listen(server, options), seeded }
  })
}

runMain(import.meta.url, start)
