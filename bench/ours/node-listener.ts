/**
 * The library's Node listener on a plain `node:http` server.
 */
import { ManagedRuntime } from "effect"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import type { Options, Started } from "../peers/shared.js"
import { listen, runMain } from "../peers/shared.js"
import * as Services from "./services.js"

export const start = (options: Options): Promise<Started> => {
  const runtime = ManagedRuntime.make(Services.layer(options))
  return Services.started(runtime, async () => {
    const seeded = await runtime.runPromise(Services.seed(options.seed ?? 0))
    const server = Http.createServer(await runtime.runPromise(AdminListener.make(Services.routing(options))))
    return { server, port: await listen(server, options), seeded }
  })
}

runMain(import.meta.url, start)
