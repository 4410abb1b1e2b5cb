/**
 * The library's Node listener on a plain `node:http` server; with `TELEMETRY=1`, with the library's telemetry on
 * (`Telemetry.layer()`: spans on Effect's own tracer, no exporter, and the metrics).
 */
import { Layer, ManagedRuntime } from "effect"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as Telemetry from "route-registry/Telemetry"
import type { Options, Started } from "../peers/shared.js"
import { listen, runMain } from "../peers/shared.js"
import * as Services from "./services.js"

export const start = (options: Options): Promise<Started> => {
  const services = Services.layer(options)
  const runtime = ManagedRuntime.make(
    process.env.TELEMETRY === "1" ? Layer.merge(services, Telemetry.layer()) : services
  )
  return Services.started(runtime, async () => {
    const seeded = await runtime.runPromise(Services.seed(options.seed ?? 0))
    const server = Http.createServer(await runtime.runPromise(AdminListener.make(Services.routing(options))))
    return { server, port: await listen(server, options), seeded }
  })
}

runMain(import.meta.url, start)
