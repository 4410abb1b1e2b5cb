/**
 * The Effect router (docs/router.md, "The Effect form") on `NodeHttpServer`, beside the routing API in one app over one runtime: routes
 * created through the API serve at once.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Data, Effect, Layer, ManagedRuntime } from "effect"
import * as Http from "node:http"
import * as AdminHttpApp from "route-registry/AdminHttpApp"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouterHttpApp from "route-registry/RouterHttpApp"
import * as RouteTable from "route-registry/RouteTable"
import { fetchFrom, type Received, type Sent } from "./utils/adapters.js"
import { assertProblem, type Store, tokens } from "./utils/httpContract.js"
import * as Contract from "./utils/routerContract.js"
import { admin, captureLogs, createRoute, type LogLine } from "./utils/routerHost.js"
import { stores } from "./utils/stores.js"

class Boom extends Data.TaggedError("Boom")<{ readonly message: string }> {}

// The middleware that ran for a request, in order, each with the handler and parameters it saw.
const seen = new WeakMap<object, Array<string>>()

const recording = (name: string): RouterHttpApp.Middleware<Boom, never> => (app) =>
  Effect.flatMap(Effect.zip(RouterHttpApp.Match, HttpServerRequest.HttpServerRequest), ([match, request]) => {
    const entry = `${name}:${match.route.handler}:${JSON.stringify(match.params)}`
    const list = seen.get(request)
    if (list === undefined) seen.set(request, [entry])
    else list.push(entry)
    return app
  })

const functions: RouterHttpApp.Functions<Boom, never> = {
  handlers: {
    ...Contract.effectFunctions.handlers,
    show: Effect.flatMap(
      Effect.zip(RouterHttpApp.Match, HttpServerRequest.HttpServerRequest),
      ([match, request]) =>
        HttpServerResponse.json({
          route: JSON.parse(Route.toJson(match.route)),
          params: match.params,
          seen: seen.get(request) ?? []
        })
    ).pipe(Effect.orDie),
    other: HttpServerResponse.unsafeJson({ handler: "other" }),
    fails: Effect.fail(new Boom({ message: "boom" })),
    dies: Effect.die(new Error("defect"))
  },
  middleware: {
    ...Contract.effectFunctions.middleware,
    first: recording("first"),
    second: recording("second"),
    deny: (app) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        request.headers["x-user"] === undefined
          ? HttpServerResponse.unsafeJson({ error: "who are you?" }, { status: 401 })
          : app),
    header: (app) => Effect.map(app, HttpServerResponse.setHeader("x-wrapped", "yes"))
  }
}

interface Running {
  readonly origin: string
  readonly send: (request: Sent) => Promise<Received>
  readonly create: (route: Parameters<typeof createRoute>[0]) => Promise<any>
  readonly logs: Array<LogLine>
  readonly close: () => Promise<void>
}

const running: Array<() => Promise<void>> = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((close) => close()))
})

const start = async (store: Store = RouteRepository.layerMemory, options?: RouterHttpApp.Options): Promise<Running> => {
  const logs = captureLogs()
  const app = Effect.gen(function*() {
    const api = yield* Effect.orDie(AdminHttpApp.make())
    const router = yield* RouterHttpApp.make(functions, options)
    // The API first, then the stored routes; what neither serves, and the routes' failures, go to the host.
    return api.pipe(
      Effect.catchTag("RouteNotFound", () => router),
      Effect.catchTag(
        "Boom",
        (error) => HttpServerResponse.unsafeJson({ host: "error", message: error.message }, { status: 500 })
      )
    )
  })
  const runtime = ManagedRuntime.make(
    Layer.unwrapEffect(Effect.map(app, (app) => HttpServer.serve(app))).pipe(
      Layer.provide(Layer.merge(RouteTable.layer.pipe(Layer.provide(store)), tokens)),
      Layer.provideMerge(NodeHttpServer.layer(() => Http.createServer(), { port: 0, host: "127.0.0.1" })),
      Layer.provide(logs.layer)
    )
  )
  const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
  // Once, whoever closes it first (a test, or the clean-up after it).
  let closing: Promise<void> | undefined
  const close = () => closing ??= runtime.dispose()
  running.push(close)
  const origin = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
  const send = fetchFrom(origin)
  return {
    origin,
    close,
    send,
    logs: logs.lines,
    create: async (route) => {
      const created = await send(createRoute(route))
      assert.strictEqual(created.status, 201, created.text)
      return created.json
    }
  }
}

describe("RouterHttpApp on NodeHttpServer", () => {
  it("runs the middleware in stored order, then the handler, each seeing the route and its parameters", async () => {
    const server = await start()
    const route = await server.create({
      method: "GET",
      path: "/users/:id",
      middleware: ["second", "header", "first"],
      handler: "show"
    })
    const response = await server.send({ method: "GET", path: "/users/a%C3%A9?q=1" })
    assert.strictEqual(response.status, 200, response.text)
    assert.strictEqual(response.headers.get("x-wrapped"), "yes")
    assert.deepStrictEqual(response.json, {
      route,
      params: { id: "aé" },
      seen: ["second:show:{\"id\":\"aé\"}", "first:show:{\"id\":\"aé\"}"]
    })
  })

  it("a middleware answering itself stops the chain", async () => {
    const server = await start()
    await server.create({ method: "GET", path: "/private", middleware: ["deny", "first"], handler: "show" })
    const refused = await server.send({ method: "GET", path: "/private" })
    assert.strictEqual(refused.status, 401)
    assert.deepStrictEqual(refused.json, { error: "who are you?" })
    const allowed = await server.send({ method: "GET", path: "/private", headers: { "x-user": "ada" } })
    assert.deepStrictEqual(allowed.json.seen, ["first:show:{}"])
  })

  it("HEAD is served by the GET route, without a body", async () => {
    const server = await start()
    await server.create({ method: "GET", path: "/things/:id", handler: "other" })
    const response = await server.send({ method: "HEAD", path: "/things/1" })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.text, "")
  })

  it("unmatched requests go to the host's not-found; a bad path is 400 malformed_path", async () => {
    const server = await start()
    await server.create({ method: "GET", path: "/things/:id", handler: "other" })
    for (const request of [{ method: "PUT", path: "/things/1" }, { method: "GET", path: "/things/1/" }]) {
      const response = await server.send(request)
      assert.strictEqual(response.status, 404, request.path)
      assert.strictEqual(response.text, "") // the platform's own empty 404
    }
    for (const path of ["/things/%zz", "/things/%FF", "/elsewhere/%"]) {
      assertProblem(await server.send({ method: "GET", path }), "malformed_path")
    }
  })

  it("an unregistered handler or middleware is answered 503 handler_unavailable, logged once per name", async () => {
    const server = await start()
    await server.create({ method: "GET", path: "/a", handler: "ghost" })
    await server.create({ method: "GET", path: "/b", middleware: ["phantom"], handler: "other" })
    for (const path of ["/a", "/b", "/a", "/b"]) {
      const response = await server.send({ method: "GET", path })
      assertProblem(response, "handler_unavailable")
      assert.include(response.json.detail, path === "/b" ? "\"phantom\"" : "\"ghost\"")
      assert.strictEqual(response.headers.get("retry-after"), "1")
    }
    const warnings = server.logs.filter((line) => line.level === "WARN").map((line) => line.message)
    assert.strictEqual(warnings.length, 2, warnings.join("\n"))
    assert.include(warnings[0], "\"ghost\"")
    assert.include(warnings[1], "\"phantom\"")
  })

  it("a handler's failure goes to the host's error handling; a defect is the server's 500", async () => {
    const server = await start()
    await server.create({ method: "GET", path: "/fails", middleware: ["first"], handler: "fails" })
    await server.create({ method: "GET", path: "/dies", handler: "dies" })
    const failed = await server.send({ method: "GET", path: "/fails" })
    assert.strictEqual(failed.status, 500)
    assert.deepStrictEqual(failed.json, { host: "error", message: "boom" })
    assert.strictEqual((await server.send({ method: "GET", path: "/dies" })).status, 500)
    assert.strictEqual((await server.send({ method: "GET", path: "/v1/routing", headers: admin })).status, 200)
  })
})

describe("RouterHttpApp options", () => {
  it("a bodyTimeoutMillis out of range is refused with InvalidOption naming it", async () => {
    for (const bodyTimeoutMillis of [0, 1.5, 2 ** 31]) {
      const made = await Effect.runPromise(Effect.flip(Effect.provideService(
        RouterHttpApp.make(functions, { bodyTimeoutMillis }),
        RouteTable.RouteTable,
        RouteTable.fromIterable<Route.StoredRoute>([])
      )))
      assert.strictEqual(made.option, "bodyTimeoutMillis")
      assert.include(made.message, "from 1 to 2147483647")
    }
  })
})

describe("the router contract: RouterHttpApp on NodeHttpServer", () => {
  Contract.routerContract({
    name: "RouterHttpApp on NodeHttpServer",
    start: () => start(RouteRepository.layerMemory, { bodyTimeoutMillis: Contract.BODY_TIMEOUT_MILLIS })
  })
})

describe.each(stores)("RouterHttpApp reads its writes on the %s", (_name, store) => {
  it("a created route serves right after the 201; PATCH moves it; DELETE stops it at once", async () => {
    const server = await start(store)
    const created = await server.create({ method: "GET", path: "/orders/:id", handler: "show" })
    assert.deepStrictEqual((await server.send({ method: "GET", path: "/orders/9" })).json.params, { id: "9" })
    const patched = await server.send({
      method: "PATCH",
      path: `/v1/routing/${created.id}`,
      headers: admin,
      body: JSON.stringify({ path: "/invoices/:n", handler: "other" })
    })
    assert.strictEqual(patched.status, 200, patched.text)
    assert.strictEqual((await server.send({ method: "GET", path: "/orders/9" })).status, 404)
    assert.deepStrictEqual((await server.send({ method: "GET", path: "/invoices/9" })).json, { handler: "other" })
    const removed = await server.send({ method: "DELETE", path: `/v1/routing/${created.id}`, headers: admin })
    assert.strictEqual(removed.status, 204)
    assert.strictEqual((await server.send({ method: "GET", path: "/invoices/9" })).status, 404)
  })
})
