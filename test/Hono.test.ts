/**
 * The Hono integration (docs/mounting.md): the routing API's contract on `@hono/node-server` on the memory store
 * answering at once and later, the integrations' contract for the stored routes, and what is particular to Hono.
 */
import { assert, describe, it } from "@effect/vitest"
import { getRequestListener } from "@hono/node-server"
import { MetricLabel } from "effect"
import { Hono } from "hono"
import type { Context } from "hono"
import { configured, matchOf, routeRegistry } from "route-registry/hono"
import type * as RR from "route-registry/hono"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Telemetry from "route-registry/Telemetry"
import { type Adapter, serveNode } from "./utils/adapters.js"
import { HeaderConfig } from "./utils/configContract.js"
import { failureContract, httpContract, limitContract, tokens } from "./utils/httpContract.js"
import { type Integration, integrationContract } from "./utils/integrationContract.js"
import { admin, failingAfterStart } from "./utils/routerHost.js"
import { adapterStores, memory } from "./utils/stores.js"

const seen = new WeakMap<Request, Array<string>>()

const recording = (name: string): RR.Middleware => async (c, next) => {
  seen.set(c.req.raw, [...(seen.get(c.req.raw) ?? []), name])
  await next()
}

const bodyOf = async (c: Context) => (c.req.header("content-type") === "application/json" ? await c.req.json() : null)

const handlers: RR.Options["handlers"] = {
  show: async (c) => c.json({ params: c.req.param(), body: await bodyOf(c), seen: seen.get(c.req.raw) ?? [] }),
  other: (c) => c.json({ handler: "other" }),
  throws: () => {
    throw new Error("boom by throw")
  },
  rejects: async () => {
    throw new Error("boom by reject")
  },
  // A Hono handler answers by returning: the second answer is what the client cannot see.
  twice: (c) => {
    const first = c.text("first answer")
    void c.text("second answer")
    return first
  }
}

const middleware: RR.Options["middleware"] = {
  a: recording("a"),
  b: recording("b"),
  stop: async (c) => c.json({ stopped: true }, 401),
  setHeader: configured(HeaderConfig, async (c, next, config) => {
    await next()
    c.header(config.name, config.value.repeat(config.repeat))
  })
}

// Served as a Node host would: `@hono/node-server`'s listener, leaving the process's Request and Response alone.
const listenerOf = (app: Hono) => getRequestListener(app.fetch, { overrideGlobalObjects: false })

const honoAdapter: Adapter = {
  name: "route-registry/hono on @hono/node-server",
  start: async (services, options) => {
    const registry = routeRegistry({ ...options, authenticator: services, store: services, handlers: {} })
    await registry.ready
    const app = new Hono().route("/", registry)
    return serveNode(listenerOf(app), registry.close)
  }
}

const integration: Integration = {
  name: "route-registry/hono",
  start: async (store, mount, apiPrefix, hostPaths) => {
    const app = new Hono()
    app.onError((error, c) => c.json({ caught: error.message }, 418))
    app.get("/health", (c) => c.json({ status: "ok" }))
    const registry = routeRegistry({ apiPrefix, hostPaths, authenticator: tokens, store, handlers, middleware })
    await registry.ready
    app.route(mount === "" ? "/" : mount, registry)
    const { close, origin } = await serveNode(listenerOf(app), registry.close)
    return { origin: origin + mount, root: origin, close }
  }
}

describe("route-registry/hono", () => {
  for (const [name, store] of adapterStores) {
    describe(`the routing API on the ${name}`, () => httpContract(honoAdapter, store))
  }
  describe(`the stored routes on the ${memory[0]}`, () => integrationContract(integration, memory[1]))
  describe("a 1 KiB body limit", () => limitContract(honoAdapter, RouteRepository.layerMemory, { maxBodyBytes: 1024 }))
  describe("failures", () =>
    failureContract({ ...honoAdapter, start: (s, o) => honoAdapter.start(failingAfterStart(s), o) }))

  it("runs on any fetch host: app.fetch with web Requests, in process", async () => {
    const registry = routeRegistry({ authenticator: tokens, handlers })
    const app = new Hono().route("/", registry)
    try {
      const created = await app.fetch(
        new Request("http://localhost/v1/routing", {
          method: "POST",
          headers: admin,
          body: JSON.stringify({ method: "GET", path: "/fetched/:id", handler: "show" })
        })
      )
      assert.strictEqual(created.status, 201)
      const served = await app.fetch(new Request("http://localhost/fetched/7"))
      assert.deepStrictEqual(await served.json(), { params: { id: "7" }, body: null, seen: [] })
    } finally {
      await registry.close()
    }
  })

  it("c.req.param() holds the stored route's parameters alone; matchOf reads the match around the mount", async () => {
    const registry = routeRegistry({
      authenticator: tokens,
      handlers: { probe: (c) => c.json({ toString: c.req.param("toString") ?? null, id: c.req.param("id") }) }
    })
    const matched: Array<unknown> = []
    const app = new Hono()
    app.use(async (c, next) => {
      await next()
      const match = matchOf(c)
      matched.push(match === undefined ? undefined : { path: match.route.path, params: { ...match.params } })
    })
    app.route("/", registry)
    try {
      const created = await app.fetch(
        new Request("http://localhost/v1/routing", {
          method: "POST",
          headers: admin,
          body: JSON.stringify({ method: "GET", path: "/items/:id", handler: "probe" })
        })
      )
      assert.strictEqual(created.status, 201)
      const served = await app.fetch(new Request("http://localhost/items/7"))
      // Hono's own lookup found Object.prototype's `toString` here, and failed decoding it: a 500.
      assert.strictEqual(served.status, 200)
      assert.deepStrictEqual(await served.json(), { toString: null, id: "7" })
      assert.deepStrictEqual(matched, [undefined, { path: "/items/:id", params: { id: "7" } }])
    } finally {
      await registry.close()
    }
  })

  it("telemetry: true turns the library's Telemetry on: the API's requests are counted", async () => {
    const count = () =>
      Telemetry.requests.unsafeValue([MetricLabel.make("operation", "list"), MetricLabel.make("status", "200")]).count
    const registry = routeRegistry({ authenticator: tokens, handlers, telemetry: true })
    const app = new Hono().route("/", registry)
    try {
      const before = count()
      const listed = await app.fetch(new Request("http://localhost/v1/routing", { headers: admin }))
      assert.strictEqual(listed.status, 200)
      assert.strictEqual(count() - before, 1)
    } finally {
      await registry.close()
    }
  })
})
