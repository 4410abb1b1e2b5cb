/**
 * The Hono integration (CONTRACT §13): the routing API's contract on `@hono/node-server` on the memory store
 * answering at once and later, the integrations' contract for the stored routes, and what is particular to Hono.
 */
import { assert, describe, it } from "@effect/vitest"
import { getRequestListener } from "@hono/node-server"
import { Hono } from "hono"
import type { Context } from "hono"
import { routeRegistry } from "route-registry/hono"
import type * as RR from "route-registry/hono"
import * as RouteRepository from "route-registry/RouteRepository"
import { type Adapter, serveNode } from "./utils/adapters.js"
import { failureContract, httpContract, tokens } from "./utils/httpContract.js"
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
  stop: async (c) => c.json({ stopped: true }, 401)
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
  start: async (store, mount) => {
    const app = new Hono()
    app.onError((error, c) => c.json({ caught: error.message }, 418))
    app.get("/health", (c) => c.json({ status: "ok" }))
    const registry = routeRegistry({ authenticator: tokens, store, handlers, middleware })
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
  describe("a 1 KiB body limit", () => httpContract(honoAdapter, RouteRepository.layerMemory, { maxBodyBytes: 1024 }))
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
})
