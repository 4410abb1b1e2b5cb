/**
 * The example host behind `npm start`: a plain `node:http` server that mounts the routing API, serves its
 * OpenAPI document at /openapi.json and a reference page at /docs, and shuts down gracefully.
 *
 * Environment: PORT (default 3000; 0 picks a free port), HOST (default 127.0.0.1), ROUTING_ADMIN_TOKENS and
 * ROUTING_READ_TOKENS (comma-separated), DATABASE_URL (Postgres store when set, otherwise in memory).
 */
import { PgClient } from "@effect/sql-pg"
import { Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Authenticator from "route-registry/Authenticator"
import * as NodeListener from "route-registry/NodeListener"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingApi from "route-registry/RoutingApi"

const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
const SHUTDOWN_GRACE_MS = 9_000

const fail = (message: string): never => {
  console.error(`error: ${message}`)
  process.exit(1)
}

const tokenList = (name: string): Array<string> =>
  (process.env[name] ?? "").split(",").map((entry) => entry.trim()).filter((entry, i) => {
    if (entry === "") return false // empty entries are ignored
    if (!TOKEN.test(entry)) {
      fail(`${name} entry ${i + 1} is not a valid bearer token: use letters, digits and - . _ ~ + / only`)
    }
    return true
  })

const readPort = (): number => {
  const raw = process.env.PORT ?? "3000"
  const port = Number(raw)
  return Number.isInteger(port) && port >= 0 && port <= 65535 ? port : fail(`PORT must be 0–65535 (got "${raw}")`)
}

const configuredTokens = (): ReadonlyArray<Authenticator.StaticToken> => {
  const admin = tokenList("ROUTING_ADMIN_TOKENS")
  const read = tokenList("ROUTING_READ_TOKENS")
  if (admin.length === 0 && read.length === 0) {
    // Never a fixed fallback: a fresh random token, shown once, so a newcomer can try the API at once.
    const token = randomBytes(24).toString("base64url")
    console.log(`no tokens configured: generated admin token ${token}`)
    console.log("(set ROUTING_ADMIN_TOKENS and ROUTING_READ_TOKENS to choose your own)")
    admin.push(token)
  }
  return [
    ...admin.map((token, i) => ({
      token: Redacted.make(token),
      scopes: ["routes:read", "routes:write"] as const,
      id: `admin-${i + 1}`
    })),
    ...read.map((token, i) => ({
      token: Redacted.make(token),
      scopes: ["routes:read"] as const,
      id: `reader-${i + 1}`
    }))
  ]
}

const store = (): Layer.Layer<RouteRepository.RouteRepository, unknown> => {
  const url = process.env.DATABASE_URL
  if (url === undefined || url === "") return RouteRepository.layerMemory
  return PgRouteRepository.layer().pipe(Layer.provide(PgClient.layer({ url: Redacted.make(url) })))
}

const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)

// A self-contained reference page (no CDN): each operation with its responses, then the schemas.
const docsPage = (spec: typeof RoutingApi.openApi): string => {
  const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
    Object.entries(item as Record<string, any>).map(([method, op]) =>
      `<h2>${method.toUpperCase()} ${escapeHtml(path)}</h2><p>${escapeHtml(op.summary ?? "")}. ${
        escapeHtml(op.description ?? "")
      }</p><table>${
        Object.entries(op.responses as Record<string, { description: string }>).map(([status, response]) =>
          `<tr><td>${status}</td><td>${escapeHtml(response.description).replace(/\n/g, "<br>")}</td></tr>`
        ).join("")
      }</table>`
    )
  ).join("")
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(spec.info.title)}</title><style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}td{padding:.2rem .6rem;
vertical-align:top;border-bottom:1px solid #ddd}pre{background:#f6f6f6;padding:1rem;overflow:auto}</style></head>
<body><h1>${escapeHtml(spec.info.title)}</h1><p>${escapeHtml(spec.info.description ?? "")}</p>
<p>Every request needs <code>Authorization: Bearer &lt;token&gt;</code>. Machine-readable:
<a href="/openapi.json">/openapi.json</a>.</p>${operations}<h2>Schemas</h2><pre>${
    escapeHtml(JSON.stringify(spec.components.schemas, null, 2))
  }</pre></body></html>`
}

const main = async () => {
  const port = readPort()
  const host = process.env.HOST || "127.0.0.1"
  const services = Layer.merge(store(), Authenticator.layerStaticTokens(configuredTokens()))
  const listener = await NodeListener.fromLayer(services).catch((error: unknown) =>
    fail(`could not start the route store: ${error instanceof Error ? error.message : String(error)}`)
  )
  const openApi = JSON.stringify(RoutingApi.openApi)
  const docs = docsPage(RoutingApi.openApi)

  const server = Http.createServer((req, res) =>
    listener(req, res, () => {
      const path = (req.url ?? "/").split("?")[0]
      if (req.method === "GET" && path === "/openapi.json") {
        res.writeHead(200, { "content-type": "application/json" }).end(openApi)
      } else if (req.method === "GET" && (path === "/docs" || path === "/")) {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(docs)
      } else {
        res.writeHead(404, { "content-type": "text/plain" }).end("Not Found: see /docs\n")
      }
    })
  )

  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    console.log(`${signal} received: finishing requests in flight`)
    // Past the grace period, connections still open are closed so the exit stays within 10 seconds.
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS)
    force.unref()
    // close() drops only the connections idle at that moment; keep-alive ones that finish later go as they idle.
    setInterval(() => server.closeIdleConnections(), 50).unref()
    server.close(() => {
      listener.dispose().then(() => {
        console.log("stopped")
        process.exit(0)
      }, (error: unknown) => {
        console.error("error while closing the route store:", error)
        process.exit(1)
      })
    })
  }
  process.on("SIGTERM", () => stop("SIGTERM"))
  process.on("SIGINT", () => stop("SIGINT"))

  server.on("error", (error) => fail(`cannot listen on ${host}:${port}: ${error.message}`))
  server.listen(port, host, () => {
    const { port: actual } = server.address() as AddressInfo
    console.log(`listening on http://${host.includes(":") ? `[${host}]` : host}:${actual}`)
  })
}

main()
