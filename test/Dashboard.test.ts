/**
 * Serving the dashboard (docs/dashboard.md): every adapter and integration answers the page and its assets below
 * `/v1/routing/ui/` when the `dashboard` option is on (under a prefix mount, below the prefix), with its security and
 * cache headers, without a token; with the option off nothing is served there.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { getRequestListener } from "@hono/node-server"
import { Either, Layer } from "effect"
import express from "express"
import Fastify from "fastify"
import { Hono } from "hono"
import * as Http from "node:http"
import * as Zlib from "node:zlib"
import * as AdminListener from "route-registry/AdminListener"
import { routeRegistry as expressRegistry } from "route-registry/express"
import fastifyRegistry from "route-registry/fastify"
import { routeRegistry as honoRegistry } from "route-registry/hono"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingHandler from "route-registry/RoutingHandler"
import * as Dashboard from "../src/internal/http/dashboard.js"
import { adapters, closeServer, listen, serveNode } from "./utils/adapters.js"
import { tokens } from "./utils/httpContract.js"

const services = Layer.merge(RouteRepository.layerMemory, tokens)

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

type Send = (path: string, method?: string) => Promise<Answer>

const answerOf = async (response: Response): Promise<Answer> => ({
  status: response.status,
  headers: response.headers,
  text: await response.text()
})

// Redirects are answers to check, not to follow.
const sendTo = (origin: string): Send => (path, method = "GET") =>
  fetch(origin + path, { method, redirect: "manual" }).then(answerOf)

/** What every host serving the dashboard at `mount` answers. */
const servesTheDashboard = async (send: Send, mount: string) => {
  const page = await send(`${mount}/v1/routing/ui/`)
  assert.strictEqual(page.status, 200)
  assert.strictEqual(page.headers.get("content-type"), "text/html; charset=utf-8")
  assert.strictEqual(page.headers.get("cache-control"), "no-cache")
  const csp = page.headers.get("content-security-policy") ?? ""
  assert.include(csp, "frame-ancestors 'none'")
  assert.include(csp, "script-src 'self'")
  assert.notMatch(csp, /unsafe-(inline|eval)/)
  assert.strictEqual(page.headers.get("x-content-type-options"), "nosniff")
  assert.strictEqual(page.headers.get("referrer-policy"), "no-referrer")
  // Relative asset addresses: the same page works under any mount.
  const assets = [...page.text.matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)].map((m) => m[1]!)
  assert.deepStrictEqual(assets.map((a) => /^main-[A-Z0-9]{8}\.(js|css)$/.test(a)), [true, true])
  for (const asset of assets) {
    const answer = await send(`${mount}/v1/routing/ui/${asset}`)
    assert.strictEqual(answer.status, 200)
    assert.strictEqual(answer.headers.get("cache-control"), "public, max-age=31536000, immutable")
    assert.match(answer.headers.get("content-type") ?? "", /^text\/(javascript|css); charset=utf-8$/)
    assert.strictEqual(answer.headers.get("x-content-type-options"), "nosniff")
  }
  const bare = await send(`${mount}/v1/routing/ui`)
  assert.strictEqual(bare.status, 308)
  assert.strictEqual(bare.headers.get("location"), "ui/")
  assert.strictEqual((await send(`${mount}/v1/routing/ui/main-OLDHASH0.js`)).status, 404)
  assert.strictEqual((await send(`${mount}/v1/routing/ui/..%2F..%2Fpackage.json`)).status, 404)
  const post = await send(`${mount}/v1/routing/ui/`, "POST")
  assert.strictEqual(post.status, 405)
  assert.strictEqual(post.headers.get("allow"), "GET")
  // The API beside it still asks for a token.
  assert.strictEqual((await send(`${mount}/v1/routing`)).status, 401)
}

describe("the dashboard", () => {
  for (const adapter of adapters) {
    it(`is served by ${adapter.name} when the option is on, and not when it is off`, async () => {
      const on = await adapter.start(services, { dashboard: true })
      onTestFinished(() => on.close())
      const send: Send = on.origin === "http://localhost"
        ? (path, method = "GET") => on.fetch(new Request(on.origin + path, { method })).then(answerOf)
        : sendTo(on.origin)
      await servesTheDashboard(send, "")
      const off = await adapter.start(services)
      onTestFinished(() => off.close())
      assert.notStrictEqual((await off.send({ method: "GET", path: "/v1/routing/ui/" })).status, 200)
    })
  }

  it("is served by the Express integration under a prefix", async () => {
    const app = express()
    const registry = expressRegistry({ authenticator: tokens, handlers: {}, dashboard: true })
    app.use("/admin", registry)
    await registry.ready
    const served = await serveNode(app, registry.close)
    onTestFinished(() => served.close())
    await servesTheDashboard(sendTo(served.origin), "/admin")
  })

  it("is served by the Fastify integration under a prefix", async () => {
    const app = Fastify()
    await app.register(fastifyRegistry, { prefix: "/admin", authenticator: tokens, handlers: {}, dashboard: true })
    await app.listen({ port: 0, host: "127.0.0.1" })
    onTestFinished(() => app.close())
    const address = app.server.address() as { port: number }
    await servesTheDashboard(sendTo(`http://127.0.0.1:${address.port}`), "/admin")
  })

  it("is served by the Hono integration under a prefix", async () => {
    const registry = honoRegistry({ authenticator: tokens, handlers: {}, dashboard: true })
    await registry.ready
    const app = new Hono().route("/admin", registry)
    const server = Http.createServer(getRequestListener(app.fetch, { overrideGlobalObjects: false }))
    const origin = await listen(server)
    onTestFinished(async () => {
      await closeServer(server)
      await registry.close()
    })
    await servesTheDashboard(sendTo(origin), "/admin")
  })

  it("ships at most 150 KB of compressed assets, naming no other host", () => {
    const assets = Dashboard.load()
    assert.isTrue(Either.isRight(assets))
    if (Either.isLeft(assets)) return
    const bodies = [assets.right.page, ...assets.right.files.values()].map((file) => String(file.body))
    const compressed = bodies.reduce((sum, body) => sum + Zlib.gzipSync(body, { level: 9 }).length, 0)
    assert.isAtMost(compressed, 150_000)
    for (const body of bodies) assert.notMatch(body, /\b(https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}\//i)
  })

  it("refuses a dashboard option that is not a boolean, naming it", async () => {
    const refused = await AdminListener.fromLayer(services, { dashboard: "yes" as unknown as boolean }).then(
      () => undefined,
      (error: unknown) => error
    )
    assert.deepInclude(refused, { _tag: "InvalidOption", option: "dashboard" })
    assert.strictEqual(RoutingHandler.checkOptions({ dashboard: false }), undefined)
  })

  it("refuses to turn on where the page was never built, saying how to build it", () => {
    const missing = Dashboard.load(new URL("file:///nonexistent/dashboard/dist/"))
    assert.isTrue(Either.isLeft(missing))
    if (Either.isLeft(missing)) {
      assert.strictEqual(missing.left.option, "dashboard")
      assert.include(missing.left.message, "npm run build")
    }
  })
})
