/**
 * `HostPaths` (docs/router.md, "Paths the host serves itself"): the paths a host declares it serves itself are taken by
 * no stored route (create, update, restore: `400 invalid_route`), `match` answers them as the host's, and the routers
 * hand them back to the host, the API and the router reading one declaration from their runtime.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, Layer, ManagedRuntime } from "effect"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as HostPaths from "route-registry/HostPaths"
import * as InvalidOption from "route-registry/InvalidOption"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouterHttpApp from "route-registry/RouterHttpApp"
import * as RouterListener from "route-registry/RouterListener"
import * as RouteTable from "route-registry/RouteTable"
import { closeServer, fetchFrom, listen, type Received } from "./utils/adapters.js"
import { assertProblem, tokens } from "./utils/httpContract.js"
import { admin, createRoute } from "./utils/routerHost.js"

describe("HostPaths.check and make", () => {
  it("takes static paths, and a static path followed by /* for it and everything below", () => {
    assert.isUndefined(HostPaths.check(["/", "/docs", "/openapi.json", "/static/*", "/a/b/c", "/v2/~x"]))
    const paths = HostPaths.make(["/docs", "/static/*"])
    assert.deepStrictEqual([...paths.exact], ["/docs"])
    assert.deepStrictEqual(paths.below, ["/static"])
  })

  it("refuses anything else, naming the entry and the fix", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      ["/docs/:page", "has a parameter or wildcard"],
      ["/files/*rest", "has a parameter or wildcard"],
      ["/*", "would take every path"],
      ["docs", "is not a valid path"],
      ["/docs/", "is not a valid path"],
      ["/a//b/*", "is not a valid path"],
      [42, "not a path"]
    ]
    for (const [entry, message] of cases) {
      const invalid = HostPaths.check(["/ok", entry as string])
      assert.instanceOf(invalid, InvalidOption.InvalidOption, String(entry))
      assert.strictEqual(invalid!.option, "hostPaths[1]")
      assert.include(invalid!.message, message, String(entry))
      assert.throws(() => HostPaths.make(["/ok", entry as string]))
    }
  })

  it("taking: a stored path equal to an entry, or at or below an entry with /*; never a path that only matches one", () => {
    const paths = HostPaths.make(["/docs", "/static/*"])
    for (const path of ["/docs", "/static", "/static/:file", "/static/css/*rest"]) {
      assert.isDefined(HostPaths.taking(paths, path), path)
    }
    for (const path of ["/docs/:page", "/:page", "/staticx", "/doc", "/v1/docs"]) {
      assert.isUndefined(HostPaths.taking(paths, path), path)
    }
    assert.isUndefined(HostPaths.taking(HostPaths.none, "/docs"))
  })

  it("serving: a request's path, as the table normalises it, query string aside", () => {
    const paths = HostPaths.make(["/docs", "/static/*"])
    assert.strictEqual(HostPaths.serving(paths, "/docs?x=1"), "/docs")
    assert.strictEqual(HostPaths.serving(paths, "/doc%73"), "/docs")
    assert.strictEqual(HostPaths.serving(paths, "/static/a%2Fb.js"), "/static/*")
    assert.strictEqual(HostPaths.serving(paths, "http://host/static"), "/static/*")
    for (const target of ["/docs/", "/Docs", "/staticx", "/%zz", "*"]) {
      assert.isUndefined(HostPaths.serving(paths, target))
    }
  })
})

// The memory store with what it offers beside it (its change log and restores among them), as its layer gives them.
type MemoryStore = Context.Context<RouteRepository.RouteRepository | RouteRepository.MemoryCapability>

// A host over one memory store, its API and its Node router built in one runtime with `paths` declared.
const host = async (store: MemoryStore, paths?: ReadonlyArray<string>) => {
  const services = Layer.merge(
    RouteTable.layer.pipe(Layer.provideMerge(Layer.succeedContext(store))),
    tokens
  )
  const runtime = ManagedRuntime.make(paths === undefined ? services : Layer.merge(services, HostPaths.layer(paths)))
  const [api, router] = await runtime.runPromise(Effect.all([
    AdminListener.make(),
    RouterListener.make({
      handlers: { page: (req, res) => void res.end(`page ${RouterListener.matchOf(req)!.params.page}`) }
    })
  ]))
  // The router before the host's own /docs: the router hands it back.
  const server = Http.createServer((req, res) =>
    api(
      req,
      res,
      () => router(req, res, () => void res.writeHead(200).end(req.url === "/docs" ? "host docs" : "host 404"))
    )
  )
  const origin = await listen(server)
  return {
    send: fetchFrom(origin),
    text: (path: string) => fetch(origin + path).then((response) => response.text()),
    close: async () => {
      await closeServer(server)
      await runtime.dispose()
    }
  }
}

type Host = Awaited<ReturnType<typeof host>>

const refusedAsHostPath = (response: Received, path: string) => {
  assertProblem(response, "invalid_route", ["errors"])
  assert.deepStrictEqual(response.json.errors.map((e: { path: string }) => e.path), ["path"])
  assert.include(response.json.errors[0].message, `${JSON.stringify(path)} is a path this host serves itself`)
}

describe("a host that declares the paths it serves itself", () => {
  const hosts: Array<Host> = []
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((started) => started.close()))
  })
  const start = async (store: MemoryStore, paths?: ReadonlyArray<string>) => {
    const started = await host(store, paths)
    hosts.push(started)
    return started
  }
  const patch = (id: string, body: object, query = "") => ({
    method: "PATCH",
    path: `/v1/routing/${id}${query}`,
    headers: admin,
    body: JSON.stringify(body)
  })
  const restore = (id: string, revision: number, query = "") => ({
    method: "POST",
    path: `/v1/routing/${id}/restore${query}`,
    headers: admin,
    body: JSON.stringify({ revision })
  })

  it("creates and updates onto them are 400 invalid_route, naming the path, dry runs included; nothing is written", async () => {
    const store = Effect.runSync(RouteRepository.makeMemoryContext())
    const { send } = await start(store, ["/docs", "/static/*"])
    for (const path of ["/docs", "/static", "/static/:file"]) {
      refusedAsHostPath(await send(createRoute({ method: "GET", path, handler: "page" })), path)
      refusedAsHostPath(
        await send({ ...createRoute({ method: "POST", path, handler: "page" }), path: "/v1/routing?dryRun=true" }),
        path
      )
    }
    // Every problem at once: the host's path and the rest of the body.
    const both = await send(createRoute({ method: "get", path: "/docs", handler: "page" }))
    assert.strictEqual(both.status, 400)
    const created = await send(createRoute({ method: "GET", path: "/:page", handler: "page" }))
    assert.strictEqual(created.status, 201, created.text)
    refusedAsHostPath(await send(patch(created.json.id, { path: "/docs" })), "/docs")
    refusedAsHostPath(await send(patch(created.json.id, { path: "/docs" }, "?dryRun=true")), "/docs")
    assert.strictEqual((await send(patch(created.json.id, { handler: "page" }))).status, 200)
    const listed = await send({ method: "GET", path: "/v1/routing", headers: admin })
    assert.deepStrictEqual(listed.json.items.map((route: { path: string }) => route.path), ["/:page"])
  })

  it("a restore onto one (a route stored before the host declared it) is 400 invalid_route, dry run or not", async () => {
    const store = Effect.runSync(RouteRepository.makeMemoryContext())
    const before = await start(store)
    const moved = await before.send(createRoute({ method: "GET", path: "/docs", handler: "page" }))
    const deleted = await before.send(createRoute({ method: "GET", path: "/openapi.json", handler: "page" }))
    assert.strictEqual((await before.send(patch(moved.json.id, { path: "/manual" }))).status, 200)
    assert.strictEqual(
      (await before.send({ method: "DELETE", path: `/v1/routing/${deleted.json.id}`, headers: admin })).status,
      204
    )
    const revisionOf = (response: Received) => Number(response.headers.get("registry-revision"))
    const { send } = await start(store, ["/docs", "/openapi.json"])
    for (const query of ["?dryRun=true", ""]) {
      refusedAsHostPath(await send(restore(moved.json.id, revisionOf(moved), query)), "/docs")
      refusedAsHostPath(await send(restore(deleted.json.id, revisionOf(deleted), query)), "/openapi.json")
    }
    const log = await send({ method: "GET", path: "/v1/routing/history", headers: admin })
    assert.deepStrictEqual(log.json.items.map((entry: { action: string }) => entry.action), [
      "delete",
      "update",
      "create",
      "create"
    ])
    // A restore elsewhere goes on as before.
    const restored = await send(restore(moved.json.id, revisionOf(moved) + 2))
    assert.strictEqual(restored.status, 200, restored.text)
  })

  it("match answers them as the host's; the router hands them back, even to a route stored before", async () => {
    const store = Effect.runSync(RouteRepository.makeMemoryContext())
    const before = await start(store)
    const legacy = await before.send(createRoute({ method: "GET", path: "/docs", handler: "page" }))
    const page = await before.send(createRoute({ method: "GET", path: "/:page", handler: "page" }))
    assert.strictEqual(await before.text("/docs"), "page undefined")
    const { send, text } = await start(store, ["/docs"])
    assert.strictEqual(await text("/docs"), "host docs")
    assert.strictEqual(await text("/doc%73"), "host 404")
    assert.strictEqual(await text("/guide"), "page guide")
    const match = await send({ method: "GET", path: "/v1/routing/match?method=GET&path=/docs%3Fx%3D1", headers: admin })
    assert.strictEqual(match.status, 200, match.text)
    assert.deepInclude(match.json, {
      outcome: "not_found",
      route: null,
      params: null,
      allow: [],
      servedByHost: "/docs"
    })
    assert.deepStrictEqual(match.json.candidates.map((c: { route: { id: string } }) => c.route.id), [
      legacy.json.id,
      page.json.id
    ])
    assert.include(match.json.candidates[0].reason, "the host serves this path itself")
    // Any other path: the table's answer, without servedByHost.
    const other = await send({ method: "GET", path: "/v1/routing/match?method=GET&path=/guide", headers: admin })
    assert.strictEqual(other.json.outcome, "route")
    assert.notProperty(other.json, "servedByHost")
  })
})

describe("RouterHttpApp with HostPaths in context", () => {
  it.effect("a path the host serves fails with RouteNotFound, for the host's own router, whatever the table holds", () =>
    Effect.gen(function*() {
      const store = yield* RouteRepository.makeMemory
      yield* store.create(yield* Route.decodeCreate({ method: "GET", path: "/:page", handler: "page" }))
      const app = yield* RouterHttpApp.make({ handlers: { page: HttpServerResponse.text("page") } }).pipe(
        Effect.provide(RouteTable.layer.pipe(Layer.provide(Layer.succeed(RouteRepository.RouteRepository, store)))),
        Effect.provide(HostPaths.layer(["/healthz"]))
      )
      const answer = (path: string) =>
        Effect.either(Effect.provideService(
          app,
          HttpServerRequest.HttpServerRequest,
          HttpServerRequest.fromWeb(new Request(`http://host${path}`))
        ))
      const healthz = yield* answer("/healthz")
      assert.isTrue(Either.isLeft(healthz) && healthz.left._tag === "RouteNotFound")
      const guide = yield* answer("/guide")
      assert.isTrue(Either.isRight(guide) && guide.right.status === 200)
    }))
})
