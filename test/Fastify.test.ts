/**
 * The Fastify integration (docs/mounting.md): the routing API's contract under Fastify's body parsing on the memory store
 * answering at once and later, the integrations' contract for the stored routes on both stores, and what is
 * particular to Fastify.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, MetricLabel } from "effect"
import Fastify, { type FastifyRequest } from "fastify"
import type { AddressInfo } from "node:net"
import routeRegistry, * as RR from "route-registry/fastify"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Telemetry from "route-registry/Telemetry"
import { type Adapter, fetchFrom } from "./utils/adapters.js"
import { HeaderConfig } from "./utils/configContract.js"
import { assertProblem, failureContract, httpContract, limitContract, tokens } from "./utils/httpContract.js"
import { type Integration, integrationContract } from "./utils/integrationContract.js"
import { admin, failingAfterStart } from "./utils/routerHost.js"
import { adapterStores, stores } from "./utils/stores.js"

const seen = new WeakMap<FastifyRequest, Array<string>>()

const recording = (name: string): RR.Middleware => async (request) => {
  seen.set(request, [...(seen.get(request) ?? []), name])
}

const handlers: RR.Options["handlers"] = {
  show: async (request) => ({ params: request.params, body: request.body ?? null, seen: seen.get(request) ?? [] }),
  other: async () => ({ handler: "other" }),
  throws: () => {
    throw new Error("boom by throw")
  },
  rejects: async () => {
    throw new Error("boom by reject")
  },
  twice: (_request, reply) => {
    reply.type("text/plain").send("first answer")
    reply.send("second answer")
  }
}

const middleware: RR.Options["middleware"] = {
  a: recording("a"),
  b: (request, _reply, done) => {
    seen.set(request, [...(seen.get(request) ?? []), "b"])
    done()
  },
  stop: async (_request, reply) => {
    await reply.code(401).send({ stopped: true })
  },
  setHeader: RR.configured(HeaderConfig, (_request, reply, done, config) => {
    reply.header(config.name, config.value.repeat(config.repeat))
    done()
  })
}

const listening = async (app: ReturnType<typeof Fastify>) => {
  await app.listen({ port: 0, host: "127.0.0.1" })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

const fastify: Adapter = {
  name: "route-registry/fastify",
  start: async (services, options) => {
    const app = Fastify()
    await app.register(routeRegistry, { ...options, authenticator: services, store: services, handlers: {} })
    const origin = await listening(app)
    return { send: fetchFrom(origin), fetch: globalThis.fetch, origin, close: () => app.close() }
  }
}

const integration: Integration = {
  name: "route-registry/fastify",
  start: async (store, mount, apiPrefix, hostPaths) => {
    const app = Fastify()
    app.setErrorHandler((error, _request, reply) => reply.code(418).send({ caught: (error as Error).message }))
    app.get("/health", async () => ({ status: "ok" }))
    await app.register(routeRegistry, {
      prefix: mount,
      apiPrefix,
      hostPaths,
      authenticator: tokens,
      store,
      handlers,
      middleware
    })
    const root = await listening(app)
    return { origin: root + mount, root, close: () => app.close() }
  }
}

describe("route-registry/fastify", () => {
  for (const [name, store] of adapterStores) {
    describe(`the routing API on the ${name}`, () => httpContract(fastify, store))
  }
  // The one integration the stored routes run through over Postgres (docs/development.md#what-runs-over-what).
  for (const [name, store] of stores) {
    describe(`the stored routes on the ${name}`, () => integrationContract(integration, store))
  }
  describe("a 1 KiB body limit", () => limitContract(fastify, RouteRepository.layerMemory, { maxBodyBytes: 1024 }))
  describe("failures", () => failureContract({ ...fastify, start: (s, o) => fastify.start(failingAfterStart(s), o) }))

  it("is a Fastify plugin: the default export and `routeRegistry`, named for Fastify", () => {
    assert.strictEqual(routeRegistry, RR.routeRegistry)
    const meta = routeRegistry as unknown as Record<symbol, unknown>
    assert.strictEqual(meta[Symbol.for("fastify.display-name")], "route-registry")
    assert.deepStrictEqual(meta[Symbol.for("plugin-meta")], { name: "route-registry", fastify: "5.x" })
    // Encapsulated: its parser changes and its wildcard route stay in its own context.
    assert.isUndefined(meta[Symbol.for("skip-override")])
  })

  it("catalog: true refuses a route naming a function not registered, suggesting the closest", async () => {
    const app = Fastify()
    await app.register(routeRegistry, { authenticator: tokens, handlers, middleware, catalog: true })
    const origin = await listening(app)
    try {
      const refused = await fetchFrom(origin)({
        method: "POST",
        path: "/v1/routing",
        headers: admin,
        body: JSON.stringify({ method: "GET", path: "/x", middleware: ["a"], handler: "shwo" })
      })
      assertProblem(refused, "invalid_route", ["errors"])
      assert.deepStrictEqual(refused.json.errors.map((e: { path: string }) => e.path), ["handler"])
      assert.include(refused.json.errors[0].message, "did you mean \"show\"?")
    } finally {
      await app.close()
    }
  })

  it("the host's routes outside the plugin keep Fastify's JSON parser", async () => {
    const app = Fastify()
    app.post("/echo", async (request) => request.body)
    await app.register(routeRegistry, { prefix: "/registry", authenticator: tokens, handlers })
    const origin = await listening(app)
    try {
      const echoed = await fetchFrom(origin)({ method: "POST", path: "/echo", headers: admin, body: "{\"a\":[1]}" })
      assert.deepStrictEqual(echoed.json, { a: [1] })
    } finally {
      await app.close()
    }
  })

  it("app.close() releases the store; two apps in one process have their own", async () => {
    let released = 0
    const counted = Layer.merge(
      RouteRepository.layerMemory,
      Layer.scopedDiscard(Effect.addFinalizer(() => Effect.sync(() => released++)))
    )
    const first = Fastify()
    const second = Fastify()
    await first.register(routeRegistry, { authenticator: tokens, store: counted, handlers })
    await second.register(routeRegistry, { authenticator: tokens, handlers })
    const one = await listening(first)
    const two = await listening(second)
    const created = await fetchFrom(one)({
      method: "POST",
      path: "/v1/routing",
      headers: admin,
      body: JSON.stringify({ method: "GET", path: "/only-first", handler: "other" })
    })
    assert.strictEqual(created.status, 201)
    assert.strictEqual((await fetchFrom(one)({ method: "GET", path: "/only-first" })).status, 200)
    assert.strictEqual((await fetchFrom(two)({ method: "GET", path: "/only-first" })).status, 404)
    await first.close()
    assert.strictEqual(released, 1)
    await second.close()
  })

  it("matchOf reads the match in a handler and in onResponse; nothing for a request no stored route served", async () => {
    const finished: Array<unknown> = []
    const app = Fastify()
    app.addHook("onResponse", async (request) => void finished.push(RR.matchOf(request)?.route.path))
    await app.register(routeRegistry, {
      authenticator: tokens,
      handlers: {
        probe: async (request) => ({ path: RR.matchOf(request)?.route.path, params: RR.matchOf(request)?.params })
      }
    })
    const send = fetchFrom(await listening(app))
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
      await app.close()
    }
  })

  it("telemetry: true turns the library's Telemetry on: the API's requests are counted", async () => {
    const count = () =>
      Telemetry.requests.unsafeValue([MetricLabel.make("operation", "list"), MetricLabel.make("status", "200")]).count
    const app = Fastify()
    await app.register(routeRegistry, { authenticator: tokens, handlers, telemetry: true })
    const send = fetchFrom(await listening(app))
    try {
      const before = count()
      assert.strictEqual((await send({ method: "GET", path: "/v1/routing", headers: admin })).status, 200)
      assert.strictEqual(count() - before, 1)
    } finally {
      await app.close()
    }
  })
})
