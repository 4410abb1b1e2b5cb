/**
 * The Node router (docs/router.md, "The Node form") through real servers: `node:http` without and with `next`, Express, and Fastify
 * (an encapsulated plugin passing the raw request and response). Routes are created through the routing API of the
 * same process, over the same runtime, so every test also shows that a created route serves at once.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import express from "express"
import Fastify from "fastify"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouterListener from "route-registry/RouterListener"
import * as RouteTable from "route-registry/RouteTable"
import { closeServer, fetchFrom, listen, type Received, type Sent } from "./utils/adapters.js"
import { assertProblem, type Store } from "./utils/httpContract.js"
import { methodName } from "./utils/repositoryContract.js"
import * as Contract from "./utils/routerContract.js"
import { admin, createRoute, hostRuntime, type LogLine } from "./utils/routerHost.js"
import { stores } from "./utils/stores.js"

// The middleware that ran for a request, in order, each with the route and parameters it saw.
const seen = new WeakMap<Http.IncomingMessage, Array<string>>()

const see = (req: Http.IncomingMessage, name: string) => {
  const match = RouterListener.matchOf(req)!
  const entry = `${name}:${match.route.handler}:${JSON.stringify(match.params)}`
  const list = seen.get(req)
  if (list === undefined) seen.set(req, [entry])
  else list.push(entry)
}

const json = (res: Http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const recording = (name: string): RouterListener.RouteFunction => (req, _res, next) => {
  see(req, name)
  next()
}

const functions: RouterListener.Functions = {
  handlers: {
    ...Contract.nodeFunctions.handlers,
    show: (req, res) => {
      const match = RouterListener.matchOf(req)!
      const params = (req as Http.IncomingMessage & { params?: unknown }).params
      json(res, 200, { route: JSON.parse(Route.toJson(match.route)), params, seen: seen.get(req) ?? [] })
    },
    other: (_req, res) => json(res, 200, { handler: "other" }),
    passes: (_req, _res, next) => next(),
    nextError: (_req, _res, next) => next(new Error("boom by next")),
    throws: () => {
      throw new Error("boom by throw")
    },
    rejects: async () => {
      await Promise.resolve()
      throw new Error("boom by rejection")
    },
    // A large answer, still being sent when the function fails: it must reach the client whole.
    answersThenThrows: (_req, res) => {
      json(res, 200, { answered: true, padding: "x".repeat(4_000_000) })
      throw new Error("boom after answering")
    },
    partialThenThrows: (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": 100 })
      res.write("only part")
      throw new Error("boom while answering")
    }
  },
  middleware: {
    ...Contract.nodeFunctions.middleware,
    first: recording("first"),
    second: recording("second"),
    third: recording("third"),
    deny: (req, res, next) => {
      see(req, "deny")
      if (req.headers["x-user"] === undefined) return json(res, 401, { error: "who are you?" })
      next()
    },
    // Passes on, then fails: the handler has answered; the failure can only be logged.
    strayThrow: (_req, _res, next) => {
      next()
      throw new Error("stray throw")
    },
    strayReject: async (_req, _res, next) => {
      next()
      await Promise.resolve()
      throw new Error("stray rejection")
    }
  }
}

interface Host {
  readonly name: string
  /** Whether the router is given a `next` to hand unmatched requests and errors to. */
  readonly next: boolean
  readonly serve: (api: AdminListener.Listener, router: RouterListener.Listener) => Promise<{
    readonly origin: string
    readonly close: () => Promise<void>
  }>
}

const serveListener = async (listener: Http.RequestListener) => {
  const server = Http.createServer(listener)
  return { origin: await listen(server), close: () => closeServer(server) }
}

const hosts: ReadonlyArray<Host> = [
  {
    name: "node:http, no next",
    next: false,
    serve: (api, router) => serveListener((req, res) => api(req, res, () => router(req, res)))
  },
  {
    name: "node:http with next",
    next: true,
    serve: (api, router) =>
      serveListener((req, res) =>
        api(req, res, () =>
          router(req, res, (error) => {
            if (error === undefined) {
              return json(res, 404, { host: "not found", allow: RouterListener.allowOf(req) ?? null })
            }
            // A naive error handler: it does nothing once the answer has started, and the router must cut it.
            if (!res.headersSent) return json(res, 500, { host: "error", message: (error as Error).message })
          }))
      )
  },
  {
    name: "Express",
    next: true,
    serve: (api, router) => {
      const app = express()
      app.use(api)
      app.use(router)
      app.use((req, res) => {
        res.status(404).json({ host: "not found", allow: RouterListener.allowOf(req) ?? null })
      })
      app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
        res.status(500).json({ host: "error", message: error.message })
      })
      return serveListener(app)
    }
  },
  {
    name: "Fastify",
    next: false,
    serve: async (api, router) => {
      const dispatch = (req: Http.IncomingMessage, res: Http.ServerResponse) => api(req, res, () => router(req, res))
      // Fastify answers a malformed URL (and a path longer than maxParamLength, which "/*" counts as a parameter)
      // itself unless told otherwise: the router has its own answers for them.
      const app = Fastify({
        frameworkErrors: (_error, request, reply) => {
          reply.hijack()
          dispatch(request.raw, reply.raw)
        }
      })
      // Encapsulated: the parsers are removed for these routes only, and the raw stream is left unread.
      await app.register(async (fastify) => {
        fastify.removeAllContentTypeParsers()
        fastify.addContentTypeParser("*", (_request, _payload, done) => done(null))
        fastify.all("/*", (request, reply) => {
          reply.hijack()
          dispatch(request.raw, reply.raw)
        })
      })
      await app.listen({ port: 0, host: "127.0.0.1" })
      const address = app.server.address() as { port: number }
      return { origin: `http://127.0.0.1:${address.port}`, close: () => app.close() }
    }
  }
]

interface Running {
  readonly origin: string
  readonly send: (request: Sent) => Promise<Received>
  readonly create: (route: Parameters<typeof createRoute>[0]) => Promise<Route.StoredRoute>
  readonly logs: Array<LogLine>
  readonly close: () => Promise<void>
}

const running: Array<Running> = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()))
})

const start = async (
  host: Host,
  store: Store = RouteRepository.layerMemory,
  options?: RouterListener.Options
): Promise<Running> => {
  const { logs, runtime } = hostRuntime(store)
  const api = await runtime.runPromise(Effect.orDie(AdminListener.make()))
  const router = await runtime.runPromise(RouterListener.make(functions, options))
  const served = await host.serve(api, router)
  const send = fetchFrom(served.origin)
  const server: Running = {
    origin: served.origin,
    send,
    create: async (route) => {
      const created = await send(createRoute(route))
      assert.strictEqual(created.status, 201, created.text)
      return created.json
    },
    logs,
    // Once, whoever closes it first (a test, or the clean-up after it).
    close: () => closing ??= served.close().then(() => runtime.dispose())
  }
  let closing: Promise<void> | undefined
  running.push(server)
  return server
}

const errors = (logs: ReadonlyArray<LogLine>) => logs.filter((line) => line.level === "ERROR")

describe.each(hosts)("RouterListener on $name", (host) => {
  it("runs the middleware in stored order, then the handler, each seeing the route and its parameters", async () => {
    const server = await start(host)
    const route = await server.create({
      method: "GET",
      path: "/users/:id/posts/:postId",
      middleware: ["second", "first", "third"],
      handler: "show"
    })
    const response = await server.send({ method: "GET", path: "/users/ada%20l/posts/7?x=1" })
    assert.strictEqual(response.status, 200, response.text)
    const params = { id: "ada l", postId: "7" }
    assert.deepStrictEqual(response.json, {
      route,
      params,
      seen: ["second", "first", "third"].map((name) => `${name}:show:${JSON.stringify(params)}`)
    })
  })

  it("a middleware answering itself stops the chain; passing on runs the rest", async () => {
    const server = await start(host)
    await server.create({ method: "GET", path: "/private", middleware: ["deny", "first"], handler: "show" })
    const refused = await server.send({ method: "GET", path: "/private" })
    assert.strictEqual(refused.status, 401)
    assert.deepStrictEqual(refused.json, { error: "who are you?" })
    const allowed = await server.send({ method: "GET", path: "/private", headers: { "x-user": "ada" } })
    assert.strictEqual(allowed.status, 200)
    assert.deepStrictEqual(allowed.json.seen, ["deny:show:{}", "first:show:{}"])
  })

  it("long paths serve as short ones do", async () => {
    const server = await start(host)
    const path = `/long/${"a".repeat(300)}/:id`
    await server.create({ method: "GET", path, handler: "show" })
    const response = await server.send({ method: "GET", path: path.replace(":id", "b".repeat(300)) })
    assert.strictEqual(response.status, 200)
    assert.deepStrictEqual(response.json.params, { id: "b".repeat(300) })
  })

  it("HEAD is served by the GET route, without a body", async () => {
    const server = await start(host)
    await server.create({ method: "GET", path: "/things/:id", middleware: ["first"], handler: "show" })
    const response = await server.send({ method: "HEAD", path: "/things/1" })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.headers.get("content-type"), "application/json")
    assert.strictEqual(response.text, "")
  })

  it("a bad path is answered 400 malformed_path, whether or not a route could match", async () => {
    const server = await start(host)
    await server.create({ method: "GET", path: "/things/:id", handler: "show" })
    for (const path of ["/things/%zz", "/things/%C3%28", "/nothing/%4"]) {
      assertProblem(await server.send({ method: "GET", path }), "malformed_path")
    }
  })

  it("an unregistered handler or middleware is answered 503 handler_unavailable, logged once per name", async () => {
    const server = await start(host)
    await server.create({ method: "GET", path: "/a", handler: "ghost" })
    await server.create({ method: "GET", path: "/b", middleware: ["first", "phantom"], handler: "show" })
    await server.create({ method: "GET", path: "/c", handler: "ghost" })
    for (const path of ["/a", "/a", "/b", "/c", "/b"]) {
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

  it("an error of a host function (next(error), throw, rejection) goes to the host, else 500 internal_error", async () => {
    const server = await start(host)
    const cases = [["nextError", "boom by next"], ["throws", "boom by throw"], ["rejects", "boom by rejection"]]
    for (const [handler, message] of cases) {
      await server.create({ method: "POST", path: `/fail/${handler}`, middleware: ["first"], handler: handler! })
      const response = await server.send({ method: "POST", path: `/fail/${handler}`, body: "{}" })
      if (host.next) {
        assert.strictEqual(response.status, 500)
        assert.deepStrictEqual(response.json, { host: "error", message })
      } else {
        assertProblem(response, "internal_error")
      }
    }
    const logged = errors(server.logs)
    if (host.next) assert.deepStrictEqual(logged, [])
    else {assert.deepStrictEqual(logged.map((line) => cases.some(([, m]) => line.cause.includes(m!))), [
        true,
        true,
        true
      ])}
    // Still serving.
    await server.create({ method: "GET", path: "/ok", handler: "other" })
    assert.strictEqual((await server.send({ method: "GET", path: "/ok" })).status, 200)
  })

  it("a failure after the function passed on is logged once per route and function, never answered twice", async () => {
    const server = await start(host)
    await server.create({ method: "GET", path: "/s1", middleware: ["strayThrow"], handler: "other" })
    await server.create({ method: "GET", path: "/s2", middleware: ["strayReject"], handler: "other" })
    for (const path of ["/s1", "/s2", "/s1", "/s2", "/s1"]) {
      const response = await server.send({ method: "GET", path })
      assert.strictEqual(response.status, 200)
      assert.deepStrictEqual(response.json, { handler: "other" })
    }
    await Effect.runPromise(Effect.sleep(20))
    const logged = errors(server.logs)
    assert.strictEqual(logged.length, 2, JSON.stringify(logged))
    assert.include(logged[0]!.message, "The function \"strayThrow\" of the route GET /s1 (")
    assert.include(logged[0]!.message, "failed after it had passed on")
    assert.include(logged[0]!.cause, "stray throw")
    assert.include(logged[1]!.message, "The function \"strayReject\" of the route GET /s2 (")
    assert.include(logged[1]!.cause, "stray rejection")
  })

  it("a function failing after its answer has started: a whole answer is left to finish, a partial one is cut", async () => {
    const server = await start(host)
    await server.create({ method: "GET", path: "/late", handler: "answersThenThrows" })
    await server.create({ method: "GET", path: "/partial", handler: "partialThenThrows" })
    if (!host.next) {
      // With a host, its error handling decides (Express closes the connection).
      const response = await server.send({ method: "GET", path: "/late" })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.json.padding.length, 4_000_000)
    }
    const partial = await server.send({ method: "GET", path: "/partial" }).then(() => "whole", () => "cut")
    assert.strictEqual(partial, "cut")
    await server.create({ method: "GET", path: "/ok", handler: "other" })
    assert.strictEqual((await server.send({ method: "GET", path: "/ok" })).status, 200)
  })

  it("unmatched requests: to the host when there is one, else 404 not_found and 405 with Allow", async () => {
    const server = await start(host)
    for (const method of ["GET", "POST", "M-SEARCH", "DELETE"]) {
      await server.create({ method, path: "/items/:id", handler: "other" })
    }
    await server.create({ method: "GET", path: "/", handler: "other" })
    await server.create({ method: "GET", path: "/items/:id/handoff", handler: "passes" })
    const wrongMethod = await server.send({ method: "PUT", path: "/items/1" })
    const noPath = await server.send({ method: "GET", path: "/items" })
    const trailing = await server.send({ method: "GET", path: "/items/1/" })
    const handedOff = await server.send({ method: "GET", path: "/items/1/handoff" })
    if (host.next) {
      // The host gets what it needs to answer 405 itself: the methods that serve the path, for a wrong method only.
      assert.deepStrictEqual(wrongMethod.json, {
        host: "not found",
        allow: ["DELETE", "GET", "HEAD", "M-SEARCH", "POST"]
      })
      for (const response of [wrongMethod, noPath, trailing, handedOff]) assert.strictEqual(response.status, 404)
      for (const response of [noPath, trailing, handedOff]) {
        assert.deepStrictEqual(response.json, { host: "not found", allow: null })
      }
    } else {
      assertProblem(wrongMethod, "method_not_allowed")
      assert.strictEqual(wrongMethod.headers.get("allow"), "DELETE, GET, HEAD, M-SEARCH, POST")
      for (const response of [noPath, trailing, handedOff]) assertProblem(response, "not_found")
    }
    assert.strictEqual((await server.send({ method: "GET", path: "/" })).status, 200)
  })

  it("the admin API still answers its own paths", async () => {
    const server = await start(host)
    const listed = await server.send({
      method: "GET",
      path: "/v1/routing",
      headers: { authorization: admin.authorization }
    })
    assert.strictEqual(listed.status, 200)
    assert.deepStrictEqual(listed.json.items, [])
  })
})

describe("RouterListener with a host whose next throws", () => {
  it("the process serves on: an unanswered request gets 500, a started answer is cut; logged once per route", async () => {
    const throwing: Host = {
      name: "node:http whose next throws",
      next: true,
      serve: (api, router) =>
        serveListener((req, res) =>
          api(req, res, () =>
            router(req, res, (error) => {
              // A host handler that answers blindly: after a started answer, writeHead throws.
              res.writeHead(error === undefined ? 404 : 500)
              throw new Error("the host's handler failed too")
            }))
        )
    }
    const server = await start(throwing)
    await server.create({ method: "GET", path: "/fails", handler: "throws" })
    await server.create({ method: "GET", path: "/partial", handler: "partialThenThrows" })
    await server.create({ method: "GET", path: "/ok", handler: "other" })
    for (let i = 0; i < 2; i++) {
      // The host wrote its 500's head before it threw; the router ends what it can.
      const failed = await server.send({ method: "GET", path: "/fails" }).then((r) => r.status, () => "cut")
      assert.include([500, "cut"], failed)
      const partial = await server.send({ method: "GET", path: "/partial" }).then(() => "whole", () => "cut")
      assert.strictEqual(partial, "cut")
    }
    assert.strictEqual((await server.send({ method: "GET", path: "/ok" })).status, 200)
    const logged = errors(server.logs).filter((line) => line.message.includes("which threw"))
    assert.strictEqual(logged.length, 2, JSON.stringify(server.logs))
  })
})

describe("RouterListener options", () => {
  it("a bodyTimeoutMillis out of range is refused with InvalidOption naming it, by make and by fromLayer", async () => {
    for (const bodyTimeoutMillis of [0, -1, 1.5, 2 ** 31, Number.NaN]) {
      const made = await Effect.runPromise(Effect.flip(Effect.provideService(
        RouterListener.make(functions, { bodyTimeoutMillis }),
        RouteTable.RouteTable,
        RouteTable.fromIterable<Route.StoredRoute>([])
      )))
      assert.strictEqual(made._tag, "InvalidOption")
      assert.strictEqual(made.option, "bodyTimeoutMillis")
      assert.include(made.message, "bodyTimeoutMillis must be a whole number of milliseconds from 1 to 2147483647")
      const layer = RouteTable.layer.pipe(Layer.provide(RouteRepository.layerMemory))
      const refused = await RouterListener.fromLayer(layer, functions, { bodyTimeoutMillis }).then(
        () => "made",
        (e) => e
      )
      assert.strictEqual(refused.option, "bodyTimeoutMillis")
    }
  })
})

describe.each(hosts)("the router contract: RouterListener on $name", (host) => {
  Contract.routerContract({
    name: host.name,
    start: () => start(host, RouteRepository.layerMemory, { bodyTimeoutMillis: Contract.BODY_TIMEOUT_MILLIS })
  })
})

/** A request through Node's own client (its parser refuses a head over 16 KiB: "Header overflow"). */
const nodeRequest = (origin: string, method: string, path: string) =>
  new Promise<{ readonly status: number; readonly allow: string | undefined }>((resolve, reject) => {
    const request = Http.request(new URL(path, origin), { method }, (response) => {
      response.resume()
      response.on("end", () => resolve({ status: response.statusCode!, allow: response.headers.allow }))
    })
    request.on("error", reject)
    request.end()
  })

// The longest methods there are (32 characters), as many as the registry holds, GET among them (so HEAD is too).
const longestMethods = Array.from({ length: RouteRepository.MAX_METHODS }, (_, i) => {
  if (i === 0) return "GET"
  const letters = methodName(i, "")
  return `${"M".repeat(Route.MAX_METHOD_LENGTH - 1 - letters.length)}-${letters}`
})

describe.each(hosts.filter((host) => !host.next))("RouterListener on $name, answering 405 itself", (host) => {
  it("at the most methods the registry holds, Allow stays under 8 KiB and Node's client reads it", async () => {
    const server = await start(host)
    for (const method of longestMethods) await server.create({ method, path: "/many/:id", handler: "other" })
    assertProblem(
      await server.send(createRoute({ method: "ONE-MORE", path: "/many/:id", handler: "other" })),
      "too_many_methods"
    )
    const answer = await nodeRequest(server.origin, "PUT", "/many/1")
    assert.strictEqual(answer.status, 405)
    const allow = answer.allow!.split(", ")
    assert.deepStrictEqual(allow, [...longestMethods, "HEAD"].sort())
    assert.isBelow(Buffer.byteLength(answer.allow!), 8 * 1024)
  })
})

describe.each(stores)("RouterListener reads its writes on the %s", (_name, store) => {
  it("a created route serves right after the 201; PATCH moves it; DELETE stops it at once", async () => {
    const server = await start(hosts[0]!, store)
    const created = await server.create({ method: "GET", path: "/orders/:id", handler: "show" })
    const first = await server.send({ method: "GET", path: "/orders/9" })
    assert.strictEqual(first.status, 200)
    assert.deepStrictEqual(first.json.params, { id: "9" })

    const patched = await server.send({
      method: "PATCH",
      path: `/v1/routing/${created.id}`,
      headers: admin,
      body: JSON.stringify({ path: "/invoices/:number", handler: "other" })
    })
    assert.strictEqual(patched.status, 200, patched.text)
    assertProblem(await server.send({ method: "GET", path: "/orders/9" }), "not_found")
    const moved = await server.send({ method: "GET", path: "/invoices/9" })
    assert.strictEqual(moved.status, 200)
    assert.deepStrictEqual(moved.json, { handler: "other" })

    const removed = await server.send({ method: "DELETE", path: `/v1/routing/${created.id}`, headers: admin })
    assert.strictEqual(removed.status, 204)
    assertProblem(await server.send({ method: "GET", path: "/invoices/9" }), "not_found")
  })

  it("routes stored before start-up serve from the first request: the table is loaded when the layer is built", async () => {
    const storeRuntime = ManagedRuntime.make(store)
    try {
      const repository = await storeRuntime.runPromise(RouteRepository.RouteRepository)
      // More than one page of the table's load, created ten at a time: on Postgres, one after another waited on 1,050
      // commits.
      const count = 1_050
      await storeRuntime.runPromise(Effect.forEach(
        Array.from({ length: count }, (_, i) => i),
        (i) =>
          repository.create(
            Schema.decodeUnknownSync(Route.CreateRoute)({
              method: "GET",
              path: `/pre/${i}/:id`,
              handler: "show"
            })
          ),
        { concurrency: 10, discard: true }
      ))
      const runtime = ManagedRuntime.make(
        RouteTable.layer.pipe(Layer.provide(Layer.succeed(RouteRepository.RouteRepository, repository)))
      )
      try {
        const router = await runtime.runPromise(RouterListener.make(functions))
        const table = await runtime.runPromise(RouteTable.RouteTable)
        assert.strictEqual(RouteTable.size(table), count)
        const served = await serveListener((req, res) => router(req, res))
        try {
          const response = await fetchFrom(served.origin)({ method: "GET", path: `/pre/${count - 1}/x` })
          assert.strictEqual(response.status, 200)
          assert.deepStrictEqual(response.json.params, { id: "x" })
        } finally {
          await served.close()
        }
      } finally {
        await runtime.dispose()
      }
    } finally {
      await storeRuntime.dispose()
    }
  })
})
