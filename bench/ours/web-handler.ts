/**
 * The library's web handler, served on Node through @hono/node-server (`serve`, with its global `Request` and
 * `Response` left alone): the bridge a fetch-style handler most often runs behind on Node.
 */
import { serve } from "@hono/node-server"
import { ManagedRuntime } from "effect"
import type * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as AdminWebHandler from "route-registry/AdminWebHandler"
import type { Options, Started } from "../peers/shared.js"
import { runMain } from "../peers/shared.js"
import * as Services from "./services.js"

export const start = (options: Options): Promise<Started> => {
  const runtime = ManagedRuntime.make(Services.layer(options))
  return Services.started(runtime, async () => {
    const seeded = await runtime.runPromise(Services.seed(options.seed ?? 0))
    const handler = await runtime.runPromise(AdminWebHandler.make(Services.routing(options)))
    const server = await new Promise<Http.Server>((resolve) => {
      const server: Http.Server = serve({
        fetch: handler,
        port: options.port ?? 0,
        hostname: options.host ?? "127.0.0.1",
        overrideGlobalObjects: false
      }, () => resolve(server)) as Http.Server
    })
    return { server, port: (server.address() as AddressInfo).port, seeded }
  })
}

runMain(import.meta.url, start)
