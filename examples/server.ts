/**
 * The example host behind `npm start`: a plain `node:http` server that mounts the routing API, serves its
 * OpenAPI document at /openapi.json and a reference page at /docs, and shuts down gracefully.
 *
 * Environment: PORT (default 3000; 0 picks a free port), HOST (default 127.0.0.1), ROUTING_ADMIN_TOKENS and
 * ROUTING_READ_TOKENS (comma-separated), DATABASE_URL (Postgres store when set, otherwise in memory).
 */
import { PgClient } from "@effect/sql-pg"
import { Layer, Redacted } from "effect"
import * as NodeListener from "route-registry/NodeListener"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingApi from "route-registry/RoutingApi"
import * as Env from "./env.js"

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

const listener = await NodeListener.fromLayer(Env.services(store())).catch((error: unknown) =>
  Env.fail(`could not start the route store: ${error instanceof Error ? error.message : String(error)}`)
)
const openApi = JSON.stringify(RoutingApi.openApi)
const docs = docsPage(RoutingApi.openApi)

Env.serve(
  (req, res) =>
    listener(req, res, () => {
      const path = (req.url ?? "/").split("?")[0]
      if (req.method === "GET" && path === "/openapi.json") {
        res.writeHead(200, { "content-type": "application/json" }).end(openApi)
      } else if (req.method === "GET" && (path === "/docs" || path === "/")) {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(docs)
      } else {
        res.writeHead(404, { "content-type": "text/plain" }).end("Not Found: see /docs\n")
      }
    }),
  3000,
  listener.dispose
)
