/**
 * The library's Node listener on a plain `node:http` server.
 */
import { ManagedRuntime } from "effect"
import * as Http from "node:http"
import * as NodeListener from "route-registry/NodeListener"
import type { Options, Started } from "../peers/shared.js"
import { closeServer, listen, runMain } from "../peers/shared.js"
import * as Services from "./services.js"

export const start = async (options: Options): Promise<Started> => {
  const runtime = ManagedRuntime.make(Services.layer(options))
  try {
    const seeded = await runtime.runPromise(Services.seed(options.seed ?? 0))
    const listener = await runtime.runPromise(NodeListener.make(Services.routing(options)))
    const server = Http.createServer(listener)
    const port = await listen(server, options)
    return {
      port,
      seeded,
      close: async () => {
        await closeServer(server)
        await runtime.dispose()
      }
    }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}

runMain(import.meta.url, start)
