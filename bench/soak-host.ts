/**
 * The host the soak runs against: the Node listener on the Postgres store, in a process of its own, reporting its
 * memory to the soak over IPC. Started by bench/soak.ts with `--expose-gc`, so each report is of live memory.
 */
import { PgClient } from "@effect/sql-pg"
import { Layer, Redacted } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as PgRouteRepository from "route-registry/PgRouteRepository"

const url = process.env.DATABASE_URL!
const store = PgRouteRepository.layer({ table: process.env.SOAK_TABLE! }).pipe(
  Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 10 }))
)
const listener = await AdminListener.fromLayer(
  Layer.merge(
    store,
    Authenticator.layerStaticTokens([{ token: Redacted.make("soak"), scopes: ["routes:read", "routes:write"] }])
  )
)
const server = Http.createServer(listener)
server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as AddressInfo).port }))

// The soak that started it is gone (its test process was ended): stop serving.
process.once("disconnect", () => process.exit(1))
process.on("message", (message: string) => {
  if (message === "memory") {
    ;(globalThis as { gc?: () => void }).gc?.()
    const { heapUsed, rss } = process.memoryUsage()
    process.send!({ heapUsed, rss })
  } else if (message === "stop") {
    server.close(() => listener.dispose().then(() => process.exit(0)))
  }
})
