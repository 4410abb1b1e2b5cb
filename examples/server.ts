/**
 * The example host behind `npm start`: a plain `node:http` server that mounts the routing API, serves its
 * OpenAPI document at /openapi.json, a reference page at /docs, /readyz and /healthz (paths it declares as its own:
 * `HOST_PATHS`), and shuts down gracefully.
 *
 * Environment: PORT (default 3000; 0 picks a free port), HOST (default 127.0.0.1), ROUTING_ADMIN_TOKENS and
 * ROUTING_READ_TOKENS (comma-separated, `token` or `name=token`), ROUTING_TOKENS (JSON), JWT_JWKS_URL, JWT_PUBLIC_KEY
 * or JWT_SECRET with JWT_ISSUER and JWT_AUDIENCE (see examples/env.ts and docs/authentication.md), DATABASE_URL (Postgres store when set, otherwise in memory; DATABASE_IDLE_TIMEOUT_MS, its pool's idle timeout), FOLLOW_URL,
 * FOLLOW_TOKEN and FOLLOW_NAME (follow that registry instead, with no store: see `follower` below; FOLLOW_RETRY_MAX_MS, its longest wait
 * between reconnections; SNAPSHOT_FILE, BOOTSTRAP_FILE and FOLLOW_START_TIMEOUT_MS, docs/resilience.md; with DATABASE_URL,
 * SNAPSHOT_FILE, BOOTSTRAP_FILE and DATABASE_START_TIMEOUT_MS likewise), READY_MAX_STALENESS_MS (see
 * /readyz below), ROUTER_STRICT, LOG_LEVEL (Effect's log levels: Info by default), DASHBOARD (`0` turns the dashboard at /v1/routing/ui/ off), and the timeouts HEADERS_TIMEOUT_MS, BODY_TIMEOUT_MS and REQUEST_TIMEOUT_MS (see
 * examples/env.ts).
 */
import { PgClient } from "@effect/sql-pg"
import type { LogLevel } from "effect"
import { Cause, Effect, Layer, Logger, ManagedRuntime, Redacted, Runtime } from "effect"
import type * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import type * as Authenticator from "route-registry/Authenticator"
import * as Catalog from "route-registry/Catalog"
import * as HostPaths from "route-registry/HostPaths"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as RouteFollower from "route-registry/RouteFollower"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouterListener from "route-registry/RouterListener"
import * as RouteTable from "route-registry/RouteTable"
import * as RoutingApi from "route-registry/RoutingApi"
import * as RoutingHandler from "route-registry/RoutingHandler"
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

/** What the host serves from: an authenticator, and a table with its store. */
export type Services = Authenticator.Authenticator | Tables

type Tables =
  | RouteTable.RouteTable
  | RouteRepository.RouteRepository
  | RouteTable.TableStatus
  | RouteTable.ReplayRing

/** `services` (an authenticator and a store) with the live table over the store, which every change goes through. */
export const withTable = <E>(
  services: Layer.Layer<RouteRepository.RouteRepository | Authenticator.Authenticator, E>
): Layer.Layer<Services, E | RouteRepository.StoreUnavailable> => RouteTable.layer.pipe(Layer.provideMerge(services))

// The URL as printed: a password in it (`http://user:secret@host`) never is.
const shown = (url: string): string => {
  const { origin, pathname } = new URL(url)
  return origin + pathname.replace(/\/$/, "")
}

// Checked here so that a typo stops start-up with the variable's name. The token is never echoed.
const followUrl = (raw: string): string =>
  URL.canParse(raw) && /^https?:$/.test(new URL(raw).protocol)
    ? raw
    : Env.fail("FOLLOW_URL must be the registry's http:// or https:// base URL, such as http://registry:3000")

/**
 * With FOLLOW_URL: a follower of the registry there (FOLLOW_TOKEN, a routes:read token), with no store and no
 * database connection, even when DATABASE_URL is set too (FOLLOW_URL wins). The URL is the registry's base URL, as
 * `npm start` prints it, without /v1/routing.
 */
const follower = (url: string): Layer.Layer<Tables, unknown> => {
  const token = process.env.FOLLOW_TOKEN ?? ""
  if (token === "") {
    return Env.fail("FOLLOW_TOKEN must be set with FOLLOW_URL: a token with routes:read on the registry")
  }
  if (process.env.DATABASE_URL) console.log("FOLLOW_URL is set: following a registry; DATABASE_URL is not used")
  const checked = followUrl(url)
  console.log(`following the registry at ${shown(checked)}`)
  // FOLLOW_NAME: the name the registry's fleet lists this follower under (default: host name and process id).
  return RouteFollower.layer({
    url: checked,
    token: Redacted.make(token),
    name: process.env.FOLLOW_NAME || undefined,
    retryMax: Env.followRetryMaxMillis(),
    // SNAPSHOT_FILE, BOOTSTRAP_FILE, FOLLOW_START_TIMEOUT_MS: routing on while the registry is away (docs/resilience.md).
    snapshotFile: process.env.SNAPSHOT_FILE || undefined,
    bootstrapFile: process.env.BOOTSTRAP_FILE || undefined,
    startTimeout: Env.optionalPositiveMillis("FOLLOW_START_TIMEOUT_MS")
  })
}

/**
 * The services `npm start` serves from, as its environment configures them: a follower's with FOLLOW_URL, the Postgres
 * store with DATABASE_URL, else the in-memory one; each with the configured tokens. A setting it cannot start with is
 * printed and exits 1 (`Env.fail`) before anything starts.
 */
export const tables = (): Layer.Layer<Services, unknown> => {
  const follow = process.env.FOLLOW_URL
  if (follow !== undefined && follow !== "") return Layer.merge(follower(follow), Env.authenticator(true))
  const url = process.env.DATABASE_URL
  if (url === undefined || url === "") return withTable(Env.services(RouteRepository.layerMemory))
  // DATABASE_IDLE_TIMEOUT_MS: how long a pool connection may stay idle before it closes (node-postgres's 10 s when unset).
  const idleTimeout = Env.optionalPositiveMillis("DATABASE_IDLE_TIMEOUT_MS")
  const client = PgClient.layer({ url: Redacted.make(databaseUrl(url)), idleTimeout })
  const store = PgRouteRepository.layer().pipe(Layer.provide(client))
  const snapshotFile = process.env.SNAPSHOT_FILE || undefined
  const bootstrapFile = process.env.BOOTSTRAP_FILE || undefined
  if (snapshotFile === undefined && bootstrapFile === undefined) return withTable(Env.services(store))
  // SNAPSHOT_FILE, BOOTSTRAP_FILE, DATABASE_START_TIMEOUT_MS: routing on while the database is down at start
  // (docs/resilience.md).
  const startTimeout = Env.optionalPositiveMillis("DATABASE_START_TIMEOUT_MS")
  return Layer.merge(RouteTable.layerFrom(store, { snapshotFile, bootstrapFile, startTimeout }), Env.authenticator())
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

const openApi = JSON.stringify(RoutingApi.openApi)
const docs = docsPage(RoutingApi.openApi)

// The host's own answer for what neither the API nor a stored route serves: 405 with Allow when stored routes serve
// the path with other methods (the router hands those to the host too), else 404.
const notFound = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
  const allow = RouterListener.allowOf(req)
  if (allow === undefined) {
    return res.writeHead(404, { "content-type": "text/plain" })
      .end("Not Found: no stored route serves this path (see /docs)\n")
  }
  res.writeHead(405, { "content-type": "text/plain", allow: allow.join(", ") })
    .end(`Method Not Allowed: stored routes serve this path with ${allow.join(", ")}\n`)
}

// The host's error handling for the route functions. An error raised before the function answered gets the host's
// 500. After the answer started, nothing can be answered: a partial answer is cut, as Express's default error handler
// does, so the client cannot take it for whole and the connection is not left hanging (the router cuts it too, after
// this handler returns, if it was left open); the router has logged it, once per route and function.
const failed = (res: Http.ServerResponse, error: unknown) => {
  if (res.headersSent) {
    if (!res.writableEnded) res.destroy()
    return
  }
  console.error("a route function failed:", error)
  res.writeHead(500, { "content-type": "text/plain" }).end("Internal Server Error\n")
}

/** What the host is built from: its services, the functions its stored routes are served with, and its options. */
export interface Parts<E> {
  /** An authenticator and a table with its store: `withTable(store)`, or a follower's (`RouteFollower.layer`). */
  readonly services: Layer.Layer<Services, E>
  readonly functions: RouterListener.Functions
  /** The names to check creates and updates against (catalog checking, `ROUTER_STRICT=1`); none when omitted. */
  readonly catalog?: Catalog.Names | undefined
  /** How long a body may take to arrive, on the API's paths and the stored routes (`BODY_TIMEOUT_MS`). */
  readonly bodyTimeoutMillis?: number | undefined
  /** Past this staleness of the table, /readyz answers 503 (`READY_MAX_STALENESS_MS`). */
  readonly maxStalenessMillis?: number | undefined
  /** Serve the dashboard at /v1/routing/ui/ (on unless `DASHBOARD=0`). */
  readonly dashboard?: boolean | undefined
  /** The least severe of the library's log lines printed (`LOG_LEVEL`); Effect's default, `Info`, when omitted. */
  readonly logLevel?: LogLevel.LogLevel | undefined
}

/**
 * The paths this host serves itself, before the stored routes: declared to the library (`HostPaths`), so that no
 * route is created on them (it would never serve) and `match` says the host serves them.
 */
export const HOST_PATHS = ["/docs", "/openapi.json", "/readyz", "/healthz"] as const

/**
 * The host's listener: the routing API, then its own paths (/readyz, /healthz, /openapi.json and /docs), then the
 * stored routes, then the host's 404. One runtime, so the API and the router share one store and one table: a route
 * created through the API serves before its 201 is sent, and stops when it is deleted; on a follower, the API serves
 * reads and the change stream from the followed table, and answers writes 405. `dispose` releases the services.
 */
export const makeHost = async <E>(parts: Parts<E>): Promise<{
  readonly listener: Http.RequestListener
  /** Ends the open change streams, at the start of a shutdown. */
  readonly closeStreams: () => void
  readonly dispose: () => Promise<void>
}> => {
  const declared = Layer.merge(parts.services, HostPaths.layer(HOST_PATHS))
  const services = parts.catalog === undefined ? declared : Layer.merge(declared, Catalog.layer(parts.catalog))
  // Provided under the services, so that what they start as they are built (a follower's fibers) logs at it too.
  const runtime = ManagedRuntime.make(
    parts.logLevel === undefined ? services : Layer.provide(services, Logger.minimumLogLevel(parts.logLevel))
  )
  const options = { bodyTimeoutMillis: parts.bodyTimeoutMillis }
  const [api, router, tableStatus] = await runtime.runPromise(
    Effect.all([
      AdminListener.make({ ...options, dashboard: parts.dashboard }),
      RouterListener.make(parts.functions, options),
      RouteTable.TableStatus
    ])
  ).catch(async (error: unknown) => {
    await runtime.dispose()
    throw error
  })

  // Readiness (docs/scaling-out.md, "Readiness and staleness"): the server listens only once the table is loaded (a follower's: once the registry
  // sent every route), so this says how current it is. Unset, the staleness bound is not checked: every process keeps
  // routing through an outage of the database or the registry, and taking them all out of rotation would stop it.
  const readiness = (res: Http.ServerResponse) => {
    const status = tableStatus.unsafeGet()
    const ready = parts.maxStalenessMillis === undefined || status.stalenessMillis <= parts.maxStalenessMillis
    // `source` says where the table came from; an unknown staleness (a bootstrap file's, Infinity) is written null.
    const body = JSON.stringify({ ready, ...status })
    res.writeHead(ready ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" }).end(body)
  }

  // The host's own answers, each to a GET of its path; any other method goes on to the stored routes' 404 or 405.
  const own: Record<(typeof HOST_PATHS)[number], (res: Http.ServerResponse) => void> = {
    "/readyz": readiness,
    // Liveness: the process answers. Never about the store or the registry, whose outage it routes through (a
    // restart would not cure it): that is /readyz's.
    "/healthz": (res) =>
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end("{\"live\":true}"),
    "/openapi.json": (res) => res.writeHead(200, { "content-type": "application/json" }).end(openApi),
    "/docs": (res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(docs)
  }
  const isOwn = (path: string): path is keyof typeof own => Object.hasOwn(own, path)

  const listener: Http.RequestListener = (req, res) =>
    api(req, res, () => {
      const path = (req.url ?? "/").split("?")[0]!
      if (req.method === "GET" && isOwn(path)) return own[path](res)
      router(req, res, (error) => error === undefined ? notFound(req, res) : failed(res, error))
    })
  return { listener, closeStreams: api.closeStreams, dispose: () => runtime.dispose() }
}

if (Env.isMain(import.meta.url)) {
  const timeouts = Env.timeouts()
  const dashboard = process.env.DASHBOARD !== "0"
  const { closeStreams, dispose, listener } = await makeHost({
    services: tables(),
    functions: Demo.functions,
    catalog: process.env.ROUTER_STRICT === "1" ? Demo.names : undefined,
    bodyTimeoutMillis: timeouts.bodyMillis,
    maxStalenessMillis: Env.optionalMillis("READY_MAX_STALENESS_MS"),
    dashboard,
    logLevel: Env.logLevel()
  }).catch((error: unknown) => Env.fail(`could not start the route store: ${explain(error)}`))
  Env.serve(listener, 3000, dispose, timeouts, closeStreams, dashboard ? RoutingHandler.DASHBOARD : undefined)
}
