import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import * as Http from "node:http"
import * as AdminHttpApp from "route-registry/AdminHttpApp"
import type * as Authenticator from "route-registry/Authenticator"
import * as RouteRepository from "route-registry/RouteRepository"
import { fetchFrom, httpApp } from "./utils/adapters.js"
import { ADMIN, failureContract, httpContract, nodeSocketContract, post, tokens } from "./utils/httpContract.js"
import { adapterStores } from "./utils/stores.js"

describe("AdminHttpApp", () => {
  for (const [name, store] of adapterStores) describe(name, () => httpContract(httpApp, store))
  describe("failures", () => failureContract(httpApp))
  describe("on a Node socket", () => nodeSocketContract(httpApp))

  it("router() combines with the host's own router; other paths get the host's 404", async () => {
    const host = HttpRouter.empty.pipe(HttpRouter.get("/health", HttpServerResponse.text("ok")))
    const serve = Layer.unwrapEffect(
      Effect.map(AdminHttpApp.router(), (routing) => HttpServer.serve(HttpRouter.concat(host, routing)))
    )
    const runtime = ManagedRuntime.make(
      serve.pipe(
        Layer.provide(Layer.merge(RouteRepository.layerMemory, tokens)),
        Layer.provideMerge(NodeHttpServer.layer(() => Http.createServer(), { port: 0, host: "127.0.0.1" }))
      )
    )
    onTestFinished(() => runtime.dispose())
    const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
    const send = fetchFrom(`http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`)
    assert.strictEqual((await send({ method: "GET", path: "/health" })).text, "ok")
    const created = await send(post({ method: "GET", path: "/", handler: "h" }))
    assert.strictEqual(created.status, 201)
    const found = await send({
      method: "GET",
      path: `/v1/routing/${created.json.id}`,
      headers: { authorization: `Bearer ${ADMIN}` }
    })
    assert.strictEqual(found.text, created.text)
    assert.strictEqual((await send({ method: "GET", path: "/v1/routing/a/b" })).status, 404)
    assert.strictEqual((await send({ method: "GET", path: "/elsewhere" })).status, 404)
  })

  it("mounted under a prefix (HttpRouter.mount), Location and Link carry it", async () => {
    const serve = Layer.unwrapEffect(
      Effect.map(
        AdminHttpApp.make(),
        (routing) => HttpServer.serve(HttpRouter.empty.pipe(HttpRouter.mountApp("/admin", routing)))
      )
    )
    const runtime = ManagedRuntime.make(
      serve.pipe(
        Layer.provide(Layer.merge(RouteRepository.layerMemory, tokens)),
        Layer.provideMerge(NodeHttpServer.layer(() => Http.createServer(), { port: 0, host: "127.0.0.1" }))
      )
    )
    onTestFinished(() => runtime.dispose())
    const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
    const send = fetchFrom(`http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`)
    const admin = { authorization: `Bearer ${ADMIN}` }
    const created = await send({ ...post({ method: "GET", path: "/a", handler: "h" }), path: "/admin/v1/routing" })
    assert.strictEqual(created.status, 201, created.text)
    assert.strictEqual(created.headers.get("location"), `/admin/v1/routing/${created.json.id}`)
    assert.strictEqual(
      (await send({ method: "GET", path: created.headers.get("location")!, headers: admin })).status,
      200
    )
    await send({ ...post({ method: "GET", path: "/b", handler: "h" }), path: "/admin/v1/routing" })
    const page = await send({ method: "GET", path: "/admin/v1/routing?limit=1", headers: admin })
    assert.match(page.headers.get("link")!, /^<\/admin\/v1\/routing\?limit=1&cursor=[^>]+>; rel="next"$/)
  })

  describe("body sources other than a Node request", () => {
    const services = Layer.merge(RouteRepository.layerMemory, tokens)
    const body = JSON.stringify({ method: "GET", path: "/from/:source", handler: "h" })
    const headers = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }
    const run = <A, E>(effect: Effect.Effect<A, E, RouteRepository.RouteRepository | Authenticator.Authenticator>) =>
      Effect.runPromise(Effect.provide(effect, services))

    it("a web Request (fetch-style platforms): created, and 413 past the limit", () =>
      run(Effect.gen(function*() {
        const app = yield* AdminHttpApp.make({ maxBodyBytes: 100 })
        const handler = HttpApp.toWebHandlerRuntime(yield* Effect.runtime<never>())(app)
        const created = yield* Effect.promise(() =>
          handler(new Request("http://localhost/v1/routing", { method: "POST", headers, body }))
        )
        assert.strictEqual(created.status, 201)
        const tooLarge = yield* Effect.promise(() =>
          handler(new Request("http://localhost/v1/routing", { method: "POST", headers, body: body.padEnd(200) }))
        )
        assert.strictEqual(tooLarge.status, 413)
      })))

    it("any other source is read from the request's byte stream", () =>
      run(Effect.gen(function*() {
        const app = yield* AdminHttpApp.make({ maxBodyBytes: 100 })
        // Only what the app reads of a request, over a source it does not recognise.
        const send = (text: string) => {
          const bytes = new TextEncoder().encode(text)
          const request = {
            method: "POST",
            url: "/v1/routing",
            headers,
            source: {},
            stream: Stream.make(bytes.subarray(0, 10), bytes.subarray(10))
          } as unknown as HttpServerRequest.HttpServerRequest
          return Effect.map(
            Effect.orDie(Effect.provideService(app, HttpServerRequest.HttpServerRequest, request)),
            (response) => response.status
          )
        }
        assert.strictEqual(yield* send(body), 201)
        assert.strictEqual(yield* send(body.padEnd(200)), 413)
      })))
  })
})
