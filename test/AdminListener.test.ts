import { assert, describe, it } from "@effect/vitest"
import { Config, Effect, Layer, Runtime } from "effect"
import express from "express"
import * as Http from "node:http"
import * as Net from "node:net"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as RouteRepository from "route-registry/RouteRepository"
import { onTestFinished } from "vitest"
import { closeServer, fetchFrom, listen, nodeListener, serveNode } from "./utils/adapters.js"
import {
  ADMIN,
  assertProblem,
  failureContract,
  get,
  httpContract,
  limitContract,
  nodeSocketContract,
  post,
  tokens
} from "./utils/httpContract.js"
import { stores } from "./utils/stores.js"
import * as TestDatabase from "./utils/TestDatabase.js"

describe("AdminListener", () => {
  // The one adapter the whole contract runs through over Postgres (docs/development.md#what-runs-over-what).
  for (const [name, store] of stores) describe(name, () => httpContract(nodeListener, store))
  describe("failures", () => failureContract(nodeListener))
  describe("on a Node socket", () => nodeSocketContract(nodeListener))
  describe("a 1 KiB body limit", () => limitContract(nodeListener, RouteRepository.layerMemory, { maxBodyBytes: 1024 }))

  it("hands paths outside /v1/routing to next(); without next answers 404 not_found", async () => {
    const listener = await AdminListener.fromLayer(Layer.merge(RouteRepository.layerMemory, tokens))
    const server = Http.createServer((req, res) =>
      req.url === "/no-next" ? listener(req, res) : listener(req, res, () => res.end("host"))
    )
    const send = fetchFrom(await listen(server))
    onTestFinished(async () => {
      await closeServer(server)
      await listener.dispose()
    })
    for (const path of ["/", "/health", "/v1/routings", "/v1/routing/a/b", "/v2/routing"]) {
      const response = await send({ method: "GET", path })
      assert.strictEqual(response.text, "host", path)
    }
    assertProblem(await send({ method: "GET", path: "/no-next" }), "not_found")
  })

  it("answers 413 on the connection before the body is sent, then closes it", async () => {
    const listener = await AdminListener.fromLayer(Layer.merge(RouteRepository.layerMemory, tokens))
    const server = Http.createServer(listener)
    const port = Number(new URL(await listen(server)).port)
    onTestFinished(async () => {
      await closeServer(server)
      await listener.dispose()
    })
    // Announce a 10 MB body but send none of it: the answer must come anyway, and the socket must close.
    const socket = Net.connect(port, "127.0.0.1")
    socket.write(
      `POST /v1/routing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n"
    )
    const answer = await new Promise<string>((resolve) => {
      let text = ""
      socket.on("data", (chunk) => (text += chunk))
      socket.on("close", () => resolve(text))
    })
    assert.match(answer, /^HTTP\/1\.1 413 /)
    assert.match(answer, /connection: close/i)
    assert.include(answer, "\"code\":\"payload_too_large\"")
  })

  it("a 201 is durable: a restarted host on the same database returns the same bytes (postgres)", async () => {
    const table = TestDatabase.freshTable()
    const first = await nodeListener.start(
      Layer.merge(PgRouteRepository.layer({ table }).pipe(Layer.provide(TestDatabase.layer())), tokens)
    )
    const created = await first.send(post({ method: "GET", path: "/durable", handler: "h" }))
    assert.strictEqual(created.status, 201)
    await first.close()
    // A new host: new client, new store; storeLayer drops the table when it closes.
    const second = await nodeListener.start(
      Layer.merge(TestDatabase.storeLayer({ table }).pipe(Layer.provide(TestDatabase.layer())), tokens)
    )
    onTestFinished(() => second.close())
    const found = await second.send(get(created.json.id))
    assert.strictEqual(found.status, 200)
    assert.strictEqual(found.text, created.text)
  })

  it("fromLayer fails when the services cannot be built, and releases what it built", async () => {
    const failing = Layer.merge(PgRouteRepository.layer().pipe(Layer.provide(TestDatabase.unreachable)), tokens)
    const error = await AdminListener.fromLayer(failing).then(() => undefined, (e: unknown) => e)
    assert.include(String(error), "StoreUnavailable")
  })

  it("fromLayer says which configuration is missing, as a plain Error rather than a FiberFailure", async () => {
    const unset = `ROUTE_REGISTRY_TEST_UNSET_${process.pid}`
    const fromConfig = Layer.unwrapEffect(
      Effect.map(
        Config.redacted(unset),
        (token) => Authenticator.layerStaticTokens([{ token, scopes: ["routes:read"] }])
      )
    )
    const error = await AdminListener.fromLayer(Layer.merge(RouteRepository.layerMemory, fromConfig)).then(
      () => undefined,
      (e: unknown) => e
    )
    assert.instanceOf(error, Error)
    assert.isFalse(Runtime.isFiberFailure(error))
    assert.strictEqual((error as Error).message, `route-registry: could not build the services: ${unset} is not set`)
  })

  describe("in Express", () => {
    const expressApp = async (mount: (app: express.Express, listener: AdminListener.Listener) => void) => {
      const listener = await AdminListener.fromLayer(Layer.merge(RouteRepository.layerMemory, tokens))
      const app = express()
      mount(app, listener)
      return serveNode(app, listener.dispose)
    }
    const admin = { authorization: `Bearer ${ADMIN}` }

    it("mounted under a prefix, Location and Link carry it", async () => {
      const server = await expressApp((app, listener) => app.use("/admin", listener))
      onTestFinished(() => server.close())
      const created = await server.send({
        ...post({ method: "GET", path: "/a", handler: "h" }),
        path: "/admin/v1/routing"
      })
      assert.strictEqual(created.status, 201, created.text)
      assert.strictEqual(created.headers.get("location"), `/admin/v1/routing/${created.json.id}`)
      const found = await server.send({ method: "GET", path: created.headers.get("location")!, headers: admin })
      assert.strictEqual(found.status, 200)
      await server.send({ ...post({ method: "GET", path: "/b", handler: "h" }), path: "/admin/v1/routing" })
      const page = await server.send({ method: "GET", path: "/admin/v1/routing?limit=1", headers: admin })
      assert.match(page.headers.get("link")!, /^<\/admin\/v1\/routing\?limit=1&cursor=[^>]+>; rel="next"$/)
      const next = page.headers.get("link")!.slice(1, page.headers.get("link")!.indexOf(">"))
      assert.deepStrictEqual(
        (await server.send({ method: "GET", path: next, headers: admin })).json.items[0].path,
        "/b"
      )
    })

    it("after a body parser, a write says the body was read first and how to mount the API, and writes nothing", async () => {
      const server = await expressApp((app, listener) => app.use(express.json(), listener))
      onTestFinished(() => server.close())
      const refused = await server.send(post({ method: "GET", path: "/a", handler: "h" }))
      assertProblem(refused, "internal_error")
      assert.include(refused.json.detail, "another middleware read the request body")
      assert.include(refused.json.detail, "mount the routing API before any body parser")
      assert.deepStrictEqual((await server.send({ method: "GET", path: "/v1/routing", headers: admin })).json.items, [])
    })
  })
})
