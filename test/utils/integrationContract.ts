/**
 * What every framework integration (docs/mounting.md) does with the stored routes, whatever the framework: each
 * integration registers the same behaviours under the same names, written in its framework's own idiom, builds a
 * host with its own routes and error handler, and runs `integrationContract` over it. Routes are created through the
 * host's own routing API, so every test also shows that a route serves as soon as it is created.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import type * as Problem from "route-registry/Problem"
import { fetchFrom, rawRequest, type Received, type Sent } from "./adapters.js"
import { assertProblem, type Store } from "./httpContract.js"
import { admin } from "./routerHost.js"

/**
 * The behaviours, by name. Handlers: `show` answers 200 `{ params, body, seen }` (`seen`: the middleware that ran,
 * in order; `body`: the parsed JSON body, or null), `other` answers 200 `{ handler: "other" }`, `throws` throws
 * `Error("boom by throw")`, `rejects` rejects with `Error("boom by reject")`, `twice` answers 200 "first answer" then
 * tries again. Middleware: `a` and `b` record their name and pass on, `stop` answers 401 `{ stopped: true }` itself.
 * The host answers `GET /health` with `{ status: "ok" }` itself, and errors with 418 `{ caught: message }`.
 */
export const names = {
  handlers: ["show", "other", "throws", "rejects", "twice"],
  middleware: ["a", "b", "stop", "setHeader"]
} as const

export interface Host {
  /** Where the registry is mounted: the host's origin followed by the mount path. */
  readonly origin: string
  /** The host's origin alone. */
  readonly root: string
  readonly close: () => Promise<void>
}

export interface Integration {
  readonly name: string
  /**
   * A host over `store` with the behaviours, the registry mounted at `mount` (`""`: the root), with `apiPrefix` and
   * `hostPaths` when given; rejects with the registry's error when it does not start.
   */
  readonly start: (
    store: Store,
    mount: string,
    apiPrefix?: string,
    hostPaths?: ReadonlyArray<string>
  ) => Promise<Host>
}

const route = (
  method: string,
  path: string,
  handler: string,
  middleware: ReadonlyArray<string> = [],
  fields: Record<string, unknown> = {}
) => ({ method, path, handler, middleware, ...fields })

/** A create sent to the routing API at `api` (an origin followed by the path the API is under). */
const createAt = (api: string, body: ReturnType<typeof route>): Promise<Received> =>
  fetchFrom(api)({ method: "POST", path: "/v1/routing", headers: admin, body: JSON.stringify(body) })

/** The contract, for a mount at the root and under `/admin`, with the API at the mount and under an `apiPrefix`. */
export const integrationContract = (integration: Integration, store: Store) => {
  for (const mount of ["", "/admin"]) {
    describe(mount === "" ? "mounted at the root" : `mounted under ${mount}`, () => {
      contract(integration, store, mount)
      describe(`the API under apiPrefix ${API_PREFIX}`, () => apiPrefixContract(integration, store, mount))
    })
  }
  it("an unusable apiPrefix is refused at start, naming apiPrefix and the fix", async () => {
    for (
      const [apiPrefix, fix] of [
        ["/control/", "write \"/control\""],
        ["/", "omit apiPrefix"],
        ["control", "must start with \"/\""],
        ["/:tenant", "static path"],
        ["/a b", "percent-encode it as %20"],
        ["/a%20b", "plain characters"]
      ] as const
    ) {
      const refused = await integration.start(store, "", apiPrefix).then(
        (host) => host.close().then(() => assert.fail(`${apiPrefix} was accepted`)),
        (error: unknown) => error as { readonly _tag: string; readonly option: string; readonly message: string }
      )
      assert.strictEqual(refused._tag, "InvalidOption", apiPrefix)
      assert.strictEqual(refused.option, "apiPrefix")
      assert.include(refused.message, fix)
    }
  })
  it("a disabled route answers 503 route_disabled; a split sends a key to its target, the override wins (docs/router.md: disabled routes and splits)", async () => {
    const host = await integration.start(store, "")
    try {
      const split = { by: "header:x-u", targets: [{ handler: "other", weight: 10_000 }], override: "x-o" }
      assert.strictEqual((await createAt(host.origin, route("GET", "/split/:id", "show", [], { split }))).status, 201)
      assert.strictEqual(
        (await createAt(host.origin, route("GET", "/split/off", "other", [], { enabled: false }))).status,
        201
      )
      const send = fetchFrom(host.origin)
      const off = await send({ method: "GET", path: "/split/off" })
      assertProblem(off, "route_disabled", [])
      assert.strictEqual(off.headers.get("retry-after"), "60")
      assert.deepStrictEqual((await send({ method: "GET", path: "/split/1", headers: { "x-u": "k" } })).json, {
        handler: "other"
      })
      assert.deepStrictEqual((await send({ method: "GET", path: "/split/1" })).json.params, { id: "1" })
      const overridden = await send({ method: "GET", path: "/split/1", headers: { "x-u": "k", "x-o": "show" } })
      assert.deepStrictEqual(overridden.json.params, { id: "1" })
    } finally {
      await host.close()
    }
  })
  it("a configured middleware gets its decoded config; a refused one answers 503 route_misconfigured (docs/router.md)", async () => {
    const host = await integration.start(store, "")
    try {
      const setHeader = (config: unknown) => [{ name: "setHeader", config }] as unknown as ReadonlyArray<string>
      for (
        const [path, config] of [["/cfg/ok", { name: "x-cfg", value: "ab", repeat: 2 }], ["/cfg/bad", { name: 1 }]]
      ) {
        assert.strictEqual(
          (await createAt(host.origin, route("GET", path as string, "other", setHeader(config)))).status,
          201
        )
      }
      const send = fetchFrom(host.origin)
      const ok = await send({ method: "GET", path: "/cfg/ok" })
      assert.deepStrictEqual([ok.status, ok.headers.get("x-cfg"), ok.json], [200, "abab", { handler: "other" }])
      assertProblem(await send({ method: "GET", path: "/cfg/bad" }), "route_misconfigured", [])
    } finally {
      await host.close()
    }
  })
  it("conditions: a route serves only a request meeting its headers and query (docs/router.md: conditions)", async () => {
    const host = await integration.start(store, "")
    try {
      const when = { headers: [{ name: "X-Version", value: "2" }], query: [{ name: "beta" }] }
      assert.strictEqual((await createAt(host.origin, route("GET", "/when/:id", "show"))).status, 201)
      assert.strictEqual((await createAt(host.origin, route("GET", "/when/:id", "other", [], { when }))).status, 201)
      const send = fetchFrom(host.origin)
      const met = await send({ method: "GET", path: "/when/1?beta", headers: { "x-version": "2" } })
      assert.deepStrictEqual(met.json, { handler: "other" })
      const missed = await send({ method: "GET", path: "/when/1?beta", headers: { "x-version": "3" } })
      assert.deepStrictEqual(missed.json.params, { id: "1" })
    } finally {
      await host.close()
    }
  })
  it("hostPaths: no stored route may take them, match says the host serves them, the router hands them on", async () => {
    const host = await integration.start(store, "", undefined, ["/health", "/assets/*"])
    try {
      for (const path of ["/health", "/assets", "/assets/:file"]) {
        const refused = await createAt(host.origin, route("GET", path, "other"))
        assertProblem(refused, "invalid_route", ["errors"])
        assert.strictEqual(refused.json.errors[0].path, "path")
        assert.include(refused.json.errors[0].message, `${JSON.stringify(path)} is a path this host serves itself`)
      }
      const page = await createAt(host.origin, route("GET", "/:page", "other"))
      const file = await createAt(host.origin, route("GET", "/:dir/:file", "other"))
      assert.strictEqual(page.status, 201, page.text)
      assert.strictEqual(file.status, 201, file.text)
      const send = fetchFrom(host.origin)
      // The framework's own /health answers; /assets/app.js, which the framework does not serve, is its not-found.
      assert.deepStrictEqual((await send({ method: "GET", path: "/health" })).json, { status: "ok" })
      assert.notDeepEqual((await send({ method: "GET", path: "/assets/app.js" })).json, { handler: "other" })
      assert.deepStrictEqual((await send({ method: "GET", path: "/elsewhere/app.js" })).json, { handler: "other" })
      for (
        const [path, entry, candidate] of [["/health", "/health", page], ["/assets/app.js", "/assets/*", file]] as const
      ) {
        const match = await send({
          method: "GET",
          path: `/v1/routing/match?${new URLSearchParams({ method: "GET", path })}`,
          headers: admin
        })
        assert.strictEqual(match.json.outcome, "not_found", path)
        assert.strictEqual(match.json.servedByHost, entry, path)
        assert.deepStrictEqual(match.json.candidates.map((c: { route: { id: string } }) => c.route.id), [
          candidate.json.id
        ])
      }
    } finally {
      await host.close()
    }
    const invalid = await integration.start(store, "", undefined, ["/docs/:page"]).then(
      (started) => started.close().then(() => assert.fail("a host path with a parameter was accepted")),
      (error: unknown) => error as { readonly _tag: string; readonly option: string }
    )
    assert.strictEqual(invalid._tag, "InvalidOption")
    assert.strictEqual(invalid.option, "hostPaths[0]")
  })
  it("an apiPrefix of every character a static segment allows", async () => {
    const apiPrefix = "/ops.v2-_~!$&'+,;=@/x"
    const host = await integration.start(store, "", apiPrefix)
    try {
      const created = await createAt(host.origin + apiPrefix, route("GET", "/hello", "other"))
      assert.strictEqual(created.status, 201, created.text)
      assert.strictEqual(created.headers.get("location"), `${apiPrefix}/v1/routing/${created.json.id}`)
    } finally {
      await host.close()
    }
  })
}

const API_PREFIX = "/control"

// The routing API under `apiPrefix` while the stored routes serve at the mount: `Location` and `Link` name what a
// client requests (the framework's mount, then the prefix), and `/v1/routing` at the mount is no longer the API's.
const apiPrefixContract = (integration: Integration, store: Store, mount: string) => {
  let host: Host | undefined
  afterEach(async () => {
    await host?.close()
    host = undefined
  })
  const api = `${mount}${API_PREFIX}/v1/routing`

  it("the API answers under the prefix, its Location and Link carrying the mount and the prefix", async () => {
    host = await integration.start(store, mount, API_PREFIX)
    const send = fetchFrom(host.origin + API_PREFIX)
    const ids: Array<string> = []
    for (const path of ["/hello", "/control/page"]) {
      const created = await createAt(host.origin + API_PREFIX, route("GET", path, "other"))
      assert.strictEqual(created.status, 201, created.text)
      assert.strictEqual(created.headers.get("location"), `${api}/${created.json.id}`)
      ids.push(created.json.id)
    }
    const page = await send({ method: "GET", path: "/v1/routing?limit=1", headers: admin })
    assert.strictEqual(page.status, 200, page.text)
    const link = page.headers.get("link") ?? ""
    assert.isTrue(link.startsWith(`<${api}?`) && link.includes("cursor=") && link.endsWith(`>; rel="next"`), link)
    const item = await send({ method: "GET", path: `/v1/routing/${ids[0]}`, headers: admin })
    assert.strictEqual(item.json.path, "/hello")
    const match = await send({ method: "GET", path: "/v1/routing/match?method=GET&path=/hello", headers: admin })
    assert.strictEqual(match.status, 200, match.text)
    assert.strictEqual(match.json.route.id, ids[0])
    const history = await send({ method: "GET", path: "/v1/routing/history", headers: admin })
    assert.strictEqual(history.status, 200, history.text)
  })

  it("the stored routes serve at the mount, the prefix's other paths included", async () => {
    host = await integration.start(store, mount, API_PREFIX)
    const created = await createAt(host.origin + API_PREFIX, route("GET", "/control/:page", "show"))
    assert.strictEqual(created.status, 201, created.text)
    const served = await fetchFrom(host.origin)({ method: "GET", path: "/control/status" })
    assert.deepStrictEqual(served.json, { params: { page: "status" }, body: null, seen: [] })
    const prefixed = await fetchFrom(host.origin + API_PREFIX)({ method: "GET", path: "/control/status" })
    assert.strictEqual(prefixed.status, 404)
  })

  it("/v1/routing at the mount is not the API: the framework's not-found, nothing written", async () => {
    host = await integration.start(store, mount, API_PREFIX)
    const send = fetchFrom(host.origin)
    for (const path of ["/v1/routing", "/v1/routing?limit=1", "/v1/routing/match?method=GET&path=/"]) {
      const answer = await send({ method: "GET", path, headers: admin })
      assert.strictEqual(answer.status, 404, `${path}: ${answer.text}`)
      assert.notStrictEqual(answer.headers.get("content-type"), "application/problem+json", path)
    }
    const post = await createAt(host.origin, route("GET", "/sneaked", "other"))
    assert.strictEqual(post.status, 404, post.text)
    const listed = await fetchFrom(host.origin + API_PREFIX)({ method: "GET", path: "/v1/routing", headers: admin })
    assert.deepStrictEqual(listed.json.items.map((r: { readonly path: string }) => r.path), [])
  })
}

const contract = (integration: Integration, store: Store, mount: string) => {
  let host: Host | undefined
  afterEach(async () => {
    await host?.close()
    host = undefined
  })
  const start = async () => {
    host = await integration.start(store, mount)
    const send = (request: Sent): Promise<Received> => fetchFrom(host!.origin)(request)
    const create = async (body: ReturnType<typeof route>) => {
      const created = await createAt(host!.origin, body)
      assert.strictEqual(created.status, 201, created.text)
      assert.strictEqual(created.headers.get("location"), `${mount}/v1/routing/${created.json.id}`)
      return created.json as { readonly id: string }
    }
    return { send, create, host: host! }
  }

  it("parameters, query and body as the framework made them; middleware in the stored order", async () => {
    const { create, send } = await start()
    await create(route("POST", "/users/:id/files/:name", "show", ["a", "b"]))
    const response = await send({
      method: "POST",
      path: "/users/caf%C3%A9/files/x%2Fy?q=1",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Ada" })
    })
    assert.strictEqual(response.status, 200, response.text)
    assert.deepStrictEqual(response.json, {
      params: { id: "café", name: "x/y" },
      body: { name: "Ada" },
      seen: ["a", "b"]
    })
  })

  it("parameters named like Object.prototype's members arrive under their names", async () => {
    const { create, send } = await start()
    await create(route("GET", "/proto/:__proto__/:toString/*constructor", "show"))
    const response = await send({ method: "GET", path: "/proto/a/b/c/d" })
    assert.strictEqual(response.status, 200, response.text)
    // Parsed from JSON, as the answer is: a literal `{ __proto__: … }` would set a prototype, not a key.
    assert.deepStrictEqual(response.json.params, JSON.parse(`{"__proto__":"a","toString":"b","constructor":"c/d"}`))
  })

  // Sent raw: a fetch client would remove the dot segments itself.
  it("the path is matched as sent: no dot segment is removed, for the stored routes and the API", async () => {
    const { create, host } = await start()
    await create(route("GET", "/admin/:x", "other"))
    for (
      const path of ["/public/../admin/secret", "/public/%2e%2e/admin/secret", "/public/%2E%2E/v1/routing?limit=1"]
    ) {
      const head = `GET ${mount}${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${admin.authorization}\r\n` +
        "Connection: close\r\n"
      const answer = await rawRequest(host.root, head)
      assert.match(answer, /^HTTP\/1\.1 404 /, `${path}: ${answer}`)
    }
  })

  it("a middleware that answers stops the chain", async () => {
    const { create, send } = await start()
    await create(route("GET", "/private", "show", ["a", "stop", "b"]))
    const response = await send({ method: "GET", path: "/private" })
    assert.strictEqual(response.status, 401)
    assert.deepStrictEqual(response.json, { stopped: true })
  })

  for (const handler of ["throws", "rejects"]) {
    it(`an error a handler ${handler === "throws" ? "throws" : "rejects with"} goes to the framework's error handler`, async () => {
      const { create, send } = await start()
      await create(route("GET", "/fails", handler))
      const response = await send({ method: "GET", path: "/fails" })
      assert.strictEqual(response.status, 418, response.text)
      assert.deepStrictEqual(response.json, { caught: handler === "throws" ? "boom by throw" : "boom by reject" })
    })
  }

  it("a handler that answers twice: the first answer stands and the host serves on", async () => {
    const { create, send } = await start()
    await create(route("GET", "/twice", "twice"))
    await create(route("GET", "/other", "other"))
    for (let i = 0; i < 3; i++) {
      const response = await send({ method: "GET", path: "/twice" })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.text, "first answer")
    }
    assert.deepStrictEqual((await send({ method: "GET", path: "/other" })).json, { handler: "other" })
  })

  it("other methods only: 405 with Allow; no route at all: the framework's own not-found", async () => {
    const { create, send } = await start()
    await create(route("GET", "/things/:id", "other"))
    await create(route("DELETE", "/things/:id", "other"))
    const refused = await send({ method: "POST", path: "/things/1" })
    assertProblem(refused, "method_not_allowed" satisfies Problem.Code)
    assert.strictEqual(refused.headers.get("allow"), "DELETE, GET, HEAD")
    const missing = await send({ method: "GET", path: "/nothing/here" })
    assert.strictEqual(missing.status, 404)
    assert.notStrictEqual(missing.headers.get("content-type"), "application/problem+json")
  })

  it("HEAD is served by the GET route, without a body", async () => {
    const { create, send } = await start()
    await create(route("GET", "/other", "other"))
    const response = await send({ method: "HEAD", path: "/other" })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.text, "")
  })

  it("a method Node parses but the framework does not route by default (M-SEARCH, PROPFIND) serves", async () => {
    const { create, send } = await start()
    await create(route("M-SEARCH", "/devices", "other"))
    await create(route("PROPFIND", "/files/*rest", "other"))
    assert.deepStrictEqual((await send({ method: "M-SEARCH", path: "/devices" })).json, { handler: "other" })
    assert.deepStrictEqual((await send({ method: "PROPFIND", path: "/files/a/b" })).json, { handler: "other" })
    const refused = await send({ method: "PROPPATCH", path: "/devices" })
    assertProblem(refused, "method_not_allowed" satisfies Problem.Code)
    assert.strictEqual(refused.headers.get("allow"), "M-SEARCH")
  })

  it("a bad path is answered 400, never served or handed on", async () => {
    const { create, send } = await start()
    await create(route("GET", "/things/:id", "show"))
    for (const path of ["/things/%ZZ", "/things/%FF", "/things/a%2"]) {
      const refused = await send({ method: "GET", path })
      assert.strictEqual(refused.status, 400, `${path}: ${refused.text}`)
      // Fastify refuses a bad escape itself (FST_ERR_BAD_URL) before any route is looked up: docs/mounting.md.
      if (refused.headers.get("content-type") === "application/problem+json") {
        assertProblem(refused, "malformed_path" satisfies Problem.Code)
      }
    }
  })

  it("created, updated and deleted routes serve, change and stop at once", async () => {
    const { create, send } = await start()
    const { id } = await create(route("GET", "/live", "other"))
    assert.deepStrictEqual((await send({ method: "GET", path: "/live" })).json, { handler: "other" })
    const patched = await send({
      method: "PATCH",
      path: `/v1/routing/${id}`,
      headers: admin,
      body: JSON.stringify({ handler: "show" })
    })
    assert.strictEqual(patched.status, 200, patched.text)
    assert.deepStrictEqual((await send({ method: "GET", path: "/live" })).json, { params: {}, body: null, seen: [] })
    assert.strictEqual((await send({ method: "DELETE", path: `/v1/routing/${id}`, headers: admin })).status, 204)
    assert.strictEqual((await send({ method: "GET", path: "/live" })).status, 404)
  })

  it("a route naming an unregistered function: 503 handler_unavailable", async () => {
    const { create, send } = await start()
    await create(route("GET", "/missing", "nobodyHasThis"))
    await create(route("GET", "/missing-middleware", "other", ["norThis"]))
    for (const path of ["/missing", "/missing-middleware"]) {
      const response = await send({ method: "GET", path })
      assertProblem(response, "handler_unavailable")
      assert.strictEqual(response.headers.get("retry-after"), "1")
    }
  })

  it("the host's own routes come first, and stay outside the mount", async () => {
    const { create, host, send } = await start()
    await create(route("GET", "/health", "other"))
    const health = await fetchFrom(host.root)({ method: "GET", path: "/health" })
    assert.deepStrictEqual(health.json, { status: "ok" })
    if (mount !== "") {
      assert.deepStrictEqual((await send({ method: "GET", path: "/health" })).json, { handler: "other" })
    }
  })
}
