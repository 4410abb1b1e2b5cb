/**
 * The Express integration (docs/mounting.md): the routing API's contract behind `express.json()` on the memory store
 * answering at once and later, the integrations' contract for the stored routes, and what is particular to Express.
 */
import { assert, describe, it } from "@effect/vitest"
import { MetricLabel } from "effect"
import express from "express"
import type { ErrorRequestHandler, Request } from "express"
import * as Http from "node:http"
import { configured, matchOf, routeRegistry } from "route-registry/express"
import type * as RR from "route-registry/express"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Telemetry from "route-registry/Telemetry"
import { type Adapter, closeServer, fetchFrom, listen, serveNode } from "./utils/adapters.js"
import { HeaderConfig } from "./utils/configContract.js"
import { bodyRows, failureContract, httpContract, limitContract, tokens } from "./utils/httpContract.js"
import { type Integration, integrationContract } from "./utils/integrationContract.js"
import { admin, failingAfterStart } from "./utils/routerHost.js"
import { adapterStores, memory } from "./utils/stores.js"

const seen = new WeakMap<Request, Array<string>>()

const recording = (name: string): RR.Handler => (req, _res, next) => {
  seen.set(req, [...(seen.get(req) ?? []), name])
  next()
}

const handlers: RR.Options["handlers"] = {
  show: (req, res) => void res.json({ params: req.params, body: req.body ?? null, seen: seen.get(req) ?? [] }),
  other: (_req, res) => void res.json({ handler: "other" }),
  throws: () => {
    throw new Error("boom by throw")
  },
  rejects: async () => {
    throw new Error("boom by reject")
  },
  twice: (_req, res) => {
    res.type("text/plain").send("first answer")
    res.send("second answer")
  }
}

const middleware: RR.Options["middleware"] = {
  a: recording("a"),
  b: recording("b"),
  stop: (_req, res) => void res.status(401).json({ stopped: true }),
  setHeader: configured(HeaderConfig, (_req, res, next, config) => {
    res.setHeader(config.name, config.value.repeat(config.repeat))
    next()
  })
}

const caught: ErrorRequestHandler = (error, _req, res, next) => {
  if (res.headersSent) return next(error)
  res.status(418).json({ caught: (error as Error).message })
}

// The API's contract whole, the registry reading bodies itself; and behind `express.json()`, the rows of the body.
const expressAdapter = (parsed: boolean): Adapter => ({
  name: parsed ? "route-registry/express behind express.json()" : "route-registry/express",
  start: async (services, options) => {
    const app = express()
    if (parsed) app.use(express.json())
    const mounted = routeRegistry({ ...options, authenticator: services, store: services, handlers: {} })
    await mounted.ready
    app.use(mounted)
    return serveNode(app, mounted.close)
  }
})

const integration: Integration = {
  name: "route-registry/express",
  start: async (store, mount, apiPrefix, hostPaths) => {
    const app = express()
    app.use(express.json())
    app.get("/health", (_req, res) => void res.json({ status: "ok" }))
    const mounted = routeRegistry({ apiPrefix, hostPaths, authenticator: tokens, store, handlers, middleware })
    await mounted.ready
    if (mount === "") app.use(mounted)
    else app.use(mount, mounted)
    app.use(caught)
    const { close, origin } = await serveNode(app, mounted.close)
    return { origin: origin + mount, root: origin, close }
  }
}

describe("route-registry/express", () => {
  for (const [name, store] of adapterStores) {
    describe(`the routing API on the ${name}`, () => httpContract(expressAdapter(false), store))
  }
  describe(`the stored routes on the ${memory[0]}`, () => integrationContract(integration, memory[1]))
  describe("a 1 KiB body limit", () =>
    limitContract(expressAdapter(false), RouteRepository.layerMemory, { maxBodyBytes: 1024 }))
  describe("failures", () =>
    failureContract({
      ...expressAdapter(false),
      start: (s, o) => expressAdapter(false).start(failingAfterStart(s), o)
    }))
  describe("behind express.json(), the default body limit", () => bodyRows(expressAdapter(true)))
  describe("behind express.json(), a 1 KiB body limit", () =>
    limitContract(expressAdapter(true), RouteRepository.layerMemory, { maxBodyBytes: 1024 }))

  it("without a body parser the API reads the body itself; requests before it is ready wait for it", async () => {
    const app = express()
    app.use(routeRegistry({ authenticator: tokens, handlers }))
    const server = Http.createServer(app)
    const origin = await listen(server)
    try {
      const created = await fetchFrom(origin)({
        method: "POST",
        path: "/v1/routing",
        headers: admin,
        body: JSON.stringify({ method: "GET", path: "/x", handler: "other" })
      })
      assert.strictEqual(created.status, 201, created.text)
      assert.deepStrictEqual((await fetchFrom(origin)({ method: "GET", path: "/x" })).json, { handler: "other" })
    } finally {
      await closeServer(server)
    }
  })

  it("the server's close releases the store", async () => {
    const app = express()
    const mounted = routeRegistry({ authenticator: tokens, handlers })
    app.use(mounted)
    const server = Http.createServer(app)
    const origin = await listen(server)
    await fetchFrom(origin)({ method: "GET", path: "/anything" })
    let released = false
    const closing = mounted.close().then(() => (released = true))
    await closeServer(server)
    await closing
    assert.isTrue(released)
  })

  it("matchOf reads the match in a handler and in res.on(\"finish\"); nothing for a request no stored route served", async () => {
    const finished: Array<unknown> = []
    const app = express()
    app.use((req, res, next) => {
      res.on("finish", () => finished.push(matchOf(req)?.route.path))
      next()
    })
    const mounted = routeRegistry({
      authenticator: tokens,
      handlers: { probe: (req, res) => void res.json({ path: matchOf(req)?.route.path, params: matchOf(req)?.params }) }
    })
    app.use(mounted)
    const server = Http.createServer(app)
    const send = fetchFrom(await listen(server))
    try {
      const body = JSON.stringify({ method: "GET", path: "/items/:id", handler: "probe" })
      assert.strictEqual((await send({ method: "POST", path: "/v1/routing", headers: admin, body })).status, 201)
      assert.deepStrictEqual((await send({ method: "GET", path: "/items/7" })).json, {
        path: "/items/:id",
        params: { id: "7" }
      })
      assert.strictEqual((await send({ method: "GET", path: "/nothing" })).status, 404)
      assert.deepStrictEqual(finished, [undefined, "/items/:id", undefined])
    } finally {
      await closeServer(server)
      await mounted.close()
    }
  })

  it("telemetry: true turns the library's Telemetry on: the API's requests are counted", async () => {
    const count = () =>
      Telemetry.requests.unsafeValue([
        MetricLabel.make("operation", "list"),
        MetricLabel.make("status", "200")
      ]).count
    const app = express()
    const mounted = routeRegistry({ authenticator: tokens, handlers, telemetry: true })
    app.use(mounted)
    const server = Http.createServer(app)
    const send = fetchFrom(await listen(server))
    try {
      const before = count()
      assert.strictEqual((await send({ method: "GET", path: "/v1/routing", headers: admin })).status, 200)
      assert.strictEqual(count() - before, 1)
    } finally {
      await closeServer(server)
      await mounted.close()
    }
  })
})
