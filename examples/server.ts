/**
 * The example host behind `npm start`: a plain `node:http` server that mounts the routing API, serves its
 * OpenAPI document at /openapi.json and a reference page at /docs, and shuts down gracefully.
 *
 * Environment: PORT (default 3000; 0 picks a free port), HOST (default 127.0.0.1), ROUTING_ADMIN_TOKENS and
 * ROUTING_READ_TOKENS (comma-separated), DATABASE_URL (Postgres store when set, otherwise in memory),
 * READY_MAX_STALENESS_MS (see /readyz below).
 */
import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Layer, ManagedRuntime, Redacted, Runtime } from "effect"
import type * as Http from "node:http"
import * as Catalog from "route-registry/Catalog"
import * as NodeListener from "route-registry/NodeListener"
import * as NodeRouter from "route-registry/NodeRouter"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as RoutingApi from "route-registry/RoutingApi"
import * as Demo from "./catalog.js"
import { docsPage } from "./docs.js"
import * as Env from "./env.js"

// Checked here because the driver reads anything: "not a url" becomes a lookup of the host "base". The value is not
// echoed, since it may hold a password.
const databaseUrl = (raw: string): string => {
  if (!URL.canParse(raw)) {
    return Env.fail("DATABASE_URL is not a valid URL: expected postgres://user:password@host:port/database")
  }
  const { protocol } = new URL(raw)
  return protocol === "postgres:" || protocol === "postgresql:"
    ? raw
    : Env.fail(`DATABASE_URL must be a postgres:// or postgresql:// URL (got ${protocol}//…)`)
}

const store = (): Layer.Layer<RouteRepository.RouteRepository, unknown> => {
  const url = process.env.DATABASE_URL
  if (url === undefined || url === "") return RouteRepository.layerMemory
  return PgRouteRepository.layer().pipe(Layer.provide(PgClient.layer({ url: Redacted.make(databaseUrl(url)) })))
}

// The messages along an error's chain of causes, outermost first. The store's own error only says "PgClient: Failed
// to connect"; the driver's error underneath says why (the server is down, the database or role does not exist).
const reasons = (error: unknown): Array<string> => {
  if (Runtime.isFiberFailure(error)) return reasons(error[Runtime.FiberFailureCauseId])
  if (Cause.isCause(error)) return [...Cause.failures(error), ...Cause.defects(error)].flatMap(reasons)
  if (error instanceof AggregateError) return [error.message, ...error.errors.flatMap(reasons)]
  if (error instanceof Error) return [error.message, ...(error.cause === undefined ? [] : reasons(error.cause))]
  return [String(error)]
}

const explain = (error: unknown): string => [...new Set(reasons(error).filter((reason) => reason !== ""))].join(": ")

// One runtime, so the routing API and the router share one store and one table: a route created through the API
// serves before its 201 is sent, and stops when it is deleted.
const services = Env.services(RouteTable.layer.pipe(Layer.provide(store())))
const runtime = ManagedRuntime.make(
  process.env.ROUTER_STRICT === "1" ? Layer.merge(services, Catalog.layer(Demo.names)) : services
)
const [api, router, tableStatus] = await runtime.runPromise(
  Effect.all([NodeListener.make(), NodeRouter.make(Demo.functions), RouteTable.TableStatus])
)
  .catch(async (error: unknown) => {
    await runtime.dispose()
    return Env.fail(`could not start the route store: ${explain(error)}`)
  })
const openApi = JSON.stringify(RoutingApi.openApi)
const docs = docsPage(RoutingApi.openApi)

// READY_MAX_STALENESS_MS: past this staleness /readyz answers 503. Unset, it answers 200 whenever the process routes,
// since every process keeps routing through a database outage and taking them all out of rotation would stop it.
const maxStaleness = Env.optionalMillis("READY_MAX_STALENESS_MS")

// Readiness (CONTRACT §12): the server listens only once the table is loaded, so this says how current it is.
const readiness = (res: Http.ServerResponse) => {
  const status = tableStatus.unsafeGet()
  const ready = maxStaleness === undefined || status.stalenessMillis <= maxStaleness
  const body = JSON.stringify({ ready, ...status })
  res.writeHead(ready ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" }).end(body)
}

// The host's own answer for what neither the API nor a stored route serves.
const notFound = (res: Http.ServerResponse) =>
  res.writeHead(404, { "content-type": "text/plain" }).end("Not Found: no stored route serves this path (see /docs)\n")

Env.serve(
  (req, res) =>
    api(req, res, () => {
      const path = (req.url ?? "/").split("?")[0]
      if (req.method === "GET" && path === "/readyz") {
        readiness(res)
      } else if (req.method === "GET" && path === "/openapi.json") {
        res.writeHead(200, { "content-type": "application/json" }).end(openApi)
      } else if (req.method === "GET" && path === "/docs") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(docs)
      } else {
        router(req, res, (error) => {
          if (error === undefined) return notFound(res)
          console.error("a route function failed:", error)
          if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" }).end("Internal Server Error\n")
        })
      }
    }),
  3000,
  () => runtime.dispose()
)
