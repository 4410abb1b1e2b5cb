/**
 * The library's `HttpApp` served by `HttpServer.serve` on `NodeHttpServer`, as an Effect host would mount it.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as Http from "node:http"
import * as AdminHttpApp from "route-registry/AdminHttpApp"
import type { Options, Started } from "../peers/shared.js"
import { runMain } from "../peers/shared.js"
import * as Services from "./services.js"

export const start = async (options: Options): Promise<Started> => {
  const services = ManagedRuntime.make(Services.layer(options))
  try {
    const seeded = await services.runPromise(Services.seed(options.seed ?? 0))
    const { context } = await services.runtime()
    const app = AdminHttpApp.make(Services.routing(options))
    const server = ManagedRuntime.make(
      Layer.unwrapEffect(Effect.map(app, (app) => HttpServer.serve(app))).pipe(
        Layer.provide(Layer.succeedContext(context)),
        Layer.provideMerge(
          NodeHttpServer.layer(() => Http.createServer(), {
            port: options.port ?? 0,
            host: options.host ?? "127.0.0.1"
          })
        )
      )
    )
    const address = await server.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
    return {
      port: address._tag === "TcpAddress" ? address.port : 0,
      seeded,
      close: async () => {
        await server.dispose()
        await services.dispose()
      }
    }
  } catch (error) {
    await services.dispose()
    throw error
  }
}

runMain(import.meta.url, start)
