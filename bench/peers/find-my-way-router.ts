/**
 * A bare `node:http` server routing with find-my-way (Fastify's router, alone): the router scenario's routes
 * registered at start-up, each answering the trivial JSON handler's bytes, written as directly as `node:http` allows.
 * What the library's router is measured against end to end: the same routes, the same answers, with nothing of a
 * framework around the router.
 */
import FindMyWay from "find-my-way"
import * as Http from "node:http"
import * as Scenario from "../router.js"
import type { Options, Started } from "./shared.js"
import { closeServer, listen, runMain } from "./shared.js"

const NOT_FOUND = JSON.stringify({ status: 404 })

const send = (res: Http.ServerResponse, status: number, body: string) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

export const start = async (options: Options): Promise<Started> => {
  const router = FindMyWay({ defaultRoute: (_req, res) => send(res, 404, NOT_FOUND) })
  const routes = Scenario.routes(options.seed ?? 0, options.routeSet)
  for (const route of routes) {
    const name = route.handler
    router.on(route.method as "GET", route.path, (_req, res, params) => {
      send(res, 200, Scenario.answer(name, params as Record<string, string>))
    })
  }
  const server = Http.createServer((req, res) => router.lookup(req, res))
  return {
    port: await listen(server, options),
    // It stores no routes through an API: the route table is find-my-way's own.
    seeded: routes.map((_, i) => String(i)),
    close: () => closeServer(server)
  }
}

runMain(import.meta.url, start)
