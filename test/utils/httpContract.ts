/**
 * The HTTP contract (docs/http-api.md): every row and rule, run through one adapter on one store. Each test starts a
 * fresh server over a fresh store.
 */
import { afterEach, assert, beforeEach, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer, Logger, Redacted } from "effect"
import * as Authenticator from "route-registry/Authenticator"
import * as InvalidOption from "route-registry/InvalidOption"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Problem from "route-registry/Problem"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as RoutingHandler from "route-registry/RoutingHandler"
import * as Split from "route-registry/Split"
import { accepted, refused } from "../fixtures/samples.js"
import type { Adapter, Received, Sent, Served } from "./adapters.js"
import { rawRequest } from "./adapters.js"
import { fleetContract } from "./fleetContract.js"
import { logRows } from "./logHttpContract.js"
import { methodName } from "./repositoryContract.js"
import * as TestDatabase from "./TestDatabase.js"

export const ADMIN = "admin-token"
export const READER = "read-token"
export const WRITER = "write-token"
/** Owns the path prefixes /payments and /api/orders (docs/authentication.md), and reads everything. */
export const OWNER = "owner-token"
/** Reads, and names itself in the fleet and reports to it (`fleet:report`): what a listed follower holds. */
export const REPORTER = "report-token"

export const tokenList: ReadonlyArray<Authenticator.StaticToken> = [
  { token: Redacted.make(ADMIN), scopes: ["routes:read", "routes:write"], id: "admin" },
  { token: Redacted.make(READER), scopes: ["routes:read"], id: "reader" },
  { token: Redacted.make(WRITER), scopes: ["routes:write"], id: "writer" },
  { token: Redacted.make(OWNER), scopes: ["routes:read", "routes:write:/payments", "routes:write:/api/orders"] },
  { token: Redacted.make(REPORTER), scopes: ["routes:read", "fleet:report"], id: "reporter" }
]

export const tokens = Authenticator.layerStaticTokens(tokenList)

export type Store = Layer.Layer<RouteRepository.RouteRepository, unknown>

const auth = (token: string) => ({ authorization: `Bearer ${token}` })
export const json = { "content-type": "application/json" }

export const post = (body: unknown, headers: Record<string, string> = { ...auth(ADMIN), ...json }): Sent => ({
  method: "POST",
  path: "/v1/routing",
  headers,
  body: typeof body === "string" ? body : JSON.stringify(body)
})

export const get = (id: string, headers: Record<string, string> = auth(ADMIN)): Sent => ({
  method: "GET",
  path: `/v1/routing/${id}`,
  headers
})

/** Asserts a problem document with exactly the contract's members. */
export const assertProblem = (response: Received, code: Problem.Code, extensions: ReadonlyArray<string> = []) => {
  assert.strictEqual(response.status, Problem.codes[code], response.text)
  assert.strictEqual(response.headers.get("content-type"), "application/problem+json")
  assert.deepStrictEqual(
    Object.keys(response.json).sort(),
    ["code", "detail", "status", "title", "type", ...extensions].sort()
  )
  assert.strictEqual(response.json.code, code)
  assert.strictEqual(response.json.status, response.status)
  assert.strictEqual(response.json.type, "about:blank")
  assert.strictEqual(response.json.title, Problem.titles[response.status])
  assert.isAbove(response.json.detail.length, 10)
}

const challenge = (response: Received) => response.headers.get("www-authenticate")

const sample = { method: "GET", path: "/users/:id", middleware: ["auth", "log"], handler: "UsersController#show" }

/** A fresh server over a fresh store for each test of the enclosing block; `send` talks to the current one. */
export const serving = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  let server: Served
  beforeEach(async () => {
    server = await adapter.start(Layer.merge(store, tokens), options)
  })
  afterEach(() => server.close())
  return (request: Sent) => server.send(request)
}

/**
 * The contract of the routes API — create, get, list, update, delete, versions, the change log, and the whole route
 * (the fields of docs/router.md and conditions) — that every adapter of the library and the benchmark's hand-written
 * peers pass alike; `httpContract` adds what a registry serves beyond it (prefix owners, match, the fleet).
 */
export const routesContract = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  createGetContract(adapter, store, options)
  describe("list, update, delete, versions", () => changeContract(adapter, store, options))
  describe("the whole route: enabled, split, description, tags, configs and conditions", () =>
    fieldsContract(adapter, store, options))
}

/** The whole contract: what every adapter of the library passes on every store. */
export const httpContract = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  routesContract(adapter, store, options)
  describe("owners of path prefixes", () => ownersContract(adapter, store, options))
  describe("which route serves a request (GET /v1/routing/match)", () => matchContract(adapter, store, options))
  describe("the fleet (GET and POST /v1/routing/followers)", () => fleetContract(adapter, store, options))
}

const SIX = ["id", "method", "path", "middleware", "handler", "createdAt"]
// A config, a split and conditions written in an order no store keeps, and their one stored form.
const CONFIG = { zeta: 1, a: { yy: [2, { d: null, c: "é" }], b: 3 }, "10": true, "2": "x" }
const CONFIG_JSON = `{"2":"x","10":true,"a":{"b":3,"yy":[2,{"c":"é","d":null}]},"zeta":1}`
const SPLIT = { override: "x-handler", targets: [{ weight: 500, handler: "v2" }], group: "g", by: "header:x-user" }
const SPLIT_JSON = `{"by":"header:x-user","group":"g","targets":[{"handler":"v2","weight":500}],"override":"x-handler"}`
const WHEN = {
  query: [{ name: "beta" }],
  headers: [{ name: "X-Version", value: "2" }, { name: "accept" }],
  host: "*.example.com"
}
const WHEN_JSON = `{"host":"*.example.com","headers":[{"name":"accept"},{"name":"x-version","value":"2"}],` +
  `"query":[{"name":"beta"}]}`

/**
 * The fields of docs/router.md and the conditions of a route, end to end: stored in one form, answered by create, get,
 * list and the log, patched and cleared, filtered and searched, restored, and conditions in conflicts.
 */
const fieldsContract = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  const send = serving(adapter, store, options)
  const create = (body: Record<string, unknown> = sample) => createOn(send, body)
  const ids = (response: Received): Array<string> => response.json.items.map((route: { id: string }) => route.id)

  it("at their defaults the fields are left out; given, they read back in one form from get, list and the log", async () => {
    const plain = await create({
      ...sample,
      middleware: ["auth", { name: "log" }],
      enabled: true,
      description: "",
      tags: [],
      when: {}
    })
    assert.deepStrictEqual(Object.keys(plain.json), SIX)
    assert.deepStrictEqual(plain.json.middleware, ["auth", "log"])
    const full = await create({
      method: "POST",
      path: "/orders",
      handler: "h",
      middleware: ["auth", { name: "rateLimit", config: CONFIG }],
      enabled: false,
      split: SPLIT,
      description: "Creates an order — «quoted», 🚀",
      tags: ["team:payments", "v2"],
      when: WHEN
    })
    const { createdAt, id } = full.json
    assert.strictEqual(
      full.text,
      `{"id":"${id}","method":"POST","path":"/orders","middleware":["auth",{"name":"rateLimit","config":${CONFIG_JSON}}],` +
        `"handler":"h","createdAt":"${createdAt}","enabled":false,"split":${SPLIT_JSON},` +
        `"description":"Creates an order — «quoted», 🚀","tags":["team:payments","v2"],"when":${WHEN_JSON}}`
    )
    assert.strictEqual((await send(get(id))).text, full.text)
    assert.include((await send(list())).text, `,${full.text}]`)
    assert.include((await send(list(`tag=v2`))).text, `[${full.text}]`)
    const log = await send({ method: "GET", path: `/v1/routing/${id}/history`, headers: auth(ADMIN) })
    assert.include(log.text, `"after":${full.text}`)
  })

  it("a patch sets and clears them; the same values written otherwise change nothing", async () => {
    const created = await create()
    const id = created.json.id
    const set = await send(patch(id, {
      middleware: [{ name: "auth", config: CONFIG }],
      enabled: false,
      split: SPLIT,
      description: "d",
      tags: ["a"],
      when: WHEN
    }))
    assert.strictEqual(set.status, 200, set.text)
    assert.include(
      set.text,
      `"enabled":false,"split":${SPLIT_JSON},"description":"d","tags":["a"],"when":${WHEN_JSON}}`
    )
    const again = await send(patch(id, {
      middleware: [{ name: "auth", config: JSON.parse(CONFIG_JSON) }],
      split: JSON.parse(SPLIT_JSON),
      when: JSON.parse(WHEN_JSON),
      tags: ["a"],
      enabled: false
    }))
    assert.strictEqual(again.status, 200, again.text)
    assert.strictEqual(again.headers.get("etag"), set.headers.get("etag"))
    assert.strictEqual(again.text, set.text)
    const cleared = await send(patch(id, {
      middleware: sample.middleware,
      enabled: true,
      split: null,
      description: "",
      tags: [],
      when: {}
    }))
    assert.strictEqual(cleared.status, 200, cleared.text)
    assert.strictEqual(cleared.text, created.text)
    assert.notStrictEqual(cleared.headers.get("etag"), created.headers.get("etag"))
    assert.strictEqual((await send(patch(id, { when: null }))).headers.get("etag"), cleared.headers.get("etag"))
  })

  it("the list filters by tag and enabled and by a configured middleware's name; q finds descriptions and tags", async () => {
    const a = (await create({ method: "GET", path: "/a", handler: "h", tags: ["team:x", "v2"] })).json.id
    const b = (await create({ method: "GET", path: "/b", handler: "h", tags: ["team:x"], enabled: false })).json.id
    const c = (await create({ method: "GET", path: "/c", handler: "h", description: "billing export" })).json.id
    const d = (await create({
      method: "GET",
      path: "/d",
      handler: "h",
      middleware: [{ name: "rateLimit", config: { max: 1 } }]
    })).json.id
    assert.deepStrictEqual(ids(await send(list("tag=team%3Ax"))), [a, b])
    assert.deepStrictEqual(ids(await send(list("enabled=false"))), [b])
    assert.deepStrictEqual(ids(await send(list("enabled=true&tag=team%3Ax"))), [a])
    assert.deepStrictEqual(ids(await send(list("enabled=true"))), [a, c, d])
    assert.deepStrictEqual(ids(await send(list("q=billing"))), [c])
    assert.deepStrictEqual(ids(await send(list("q=v2"))), [a])
    assert.deepStrictEqual(ids(await send(list("middleware=rateLimit"))), [d])
    const first = await send(list("tag=team%3Ax&limit=1"))
    assert.deepStrictEqual(ids(first), [a])
    const cursor = first.json.nextCursor
    assert.strictEqual(first.headers.get("link"), `</v1/routing?limit=1&tag=team%3Ax&cursor=${cursor}>; rel="next"`)
    const next = await send(list(`limit=1&tag=team%3Ax&cursor=${cursor}`))
    assert.deepStrictEqual(ids(next), [b])
    assert.strictEqual(next.json.nextCursor, null)
  })

  it("other conditions on one method and shape do not conflict; the same ones do until a delete frees them", async () => {
    await create()
    const v2 = await create({
      ...sample,
      path: "/users/:userId",
      when: { headers: [{ name: "x-version", value: "2" }] }
    })
    const hosted = await create({ ...sample, path: "/users/:uid", when: { host: "api.example.com" } })
    const same = post({ ...sample, when: { headers: [{ name: "X-Version", value: "2" }] } })
    const refused = await send(same)
    assertProblem(refused, "route_conflict", ["conflictingRouteId"])
    assert.strictEqual(refused.json.conflictingRouteId, v2.json.id)
    assert.strictEqual((await send(remove(v2.json.id))).status, 204)
    assert.strictEqual((await send(same)).status, 201)
    const moved = await send(patch(hosted.json.id, { when: {} }))
    assertProblem(moved, "route_conflict", ["conflictingRouteId"])
  })

  it("onto another route's method, shape and conditions written differently: 409 naming the conditions", async () => {
    const first = await create({
      ...sample,
      when: { headers: [{ name: "X-Version", value: "2" }, { name: "accept" }] }
    })
    const moved = await create({ ...sample, path: "/users/:userId", when: { headers: [{ name: "accept" }] } })
    const reordered = { headers: [{ name: "Accept" }, { name: "x-version", value: "2" }] }
    const patched = await send(patch(moved.json.id, { when: reordered }))
    assertProblem(patched, "route_conflict", ["conflictingRouteId"])
    assert.strictEqual(patched.json.conflictingRouteId, first.json.id)
    assert.include(patched.json.detail, `GET /users/:userId with the conditions {"headers":[{"name":"accept"},`)
    assert.strictEqual((await send(get(moved.json.id))).text, moved.text)
  })

  it("a restore brings the fields back and takes away those added since, in place or as a new route", async () => {
    const created = await create({ ...sample, tags: ["a"], when: { query: [{ name: "beta" }] } })
    const { id, tags, when } = created.json
    assert.deepStrictEqual({ tags, when }, { tags: ["a"], when: { query: [{ name: "beta" }] } })
    const revision = Number(created.headers.get("registry-revision"))
    const changed = await send(patch(id, { tags: [], when: {}, description: "added", enabled: false }))
    assert.deepStrictEqual(Object.keys(changed.json), [...SIX, "enabled", "description"])
    const restore = () =>
      send({
        method: "POST",
        path: `/v1/routing/${id}/restore`,
        headers: { ...auth(ADMIN), ...json },
        body: JSON.stringify({ revision })
      })
    const restored = await restore()
    assert.strictEqual(restored.status, 200, restored.text)
    assert.strictEqual(restored.text, created.text)
    assert.strictEqual((await send(remove(id))).status, 204)
    const again = await restore()
    assert.strictEqual(again.status, 201, again.text)
    assert.deepStrictEqual({ ...again.json, id, createdAt: created.json.createdAt }, created.json)
  })

  it("tag and enabled out of their forms: 400 invalid_query naming the parameter, its value and the fix", async () => {
    const badTag = await send(list("tag=Team%3AAccounts"))
    assertProblem(badTag, "invalid_query", ["errors"])
    assert.deepStrictEqual(badTag.json.errors, [{
      path: "tag",
      message: `is not a tag (got "Team:Accounts"): 1–64 of lowercase letters, digits and . _ : / -, ` +
        "starting with a letter or digit"
    }])
    const maybe = await send(list("enabled=maybe&tag=ok"))
    assertProblem(maybe, "invalid_query", ["errors"])
    assert.deepStrictEqual(maybe.json.errors, [{
      path: "enabled",
      message: `must be true or false (got "maybe"): enabled=false lists the disabled routes`
    }])
    const both = await send(list("enabled=TRUE&tag=-x"))
    assert.sameMembers(paths(both), ["enabled", "tag"])
  })
}

/**
 * The rows of create and get, authentication, the body and its limits: what a host whose own body parser reads the
 * body before the API still gets (the body timeout is then the parser's), over the memory store.
 */
export const bodyRows = (adapter: Adapter, options?: RoutingHandler.Options) =>
  requestRows(serving(adapter, RouteRepository.layerMemory, options), options)

type Send = (request: Sent) => Promise<Received>

const requestRows = (send: Send, options?: RoutingHandler.Options) => {
  // Samples larger than a small configured limit would only test the limit.
  const fits = (body: unknown) => JSON.stringify(body).length < limitOf(options)

  describe("create and get", () => {
    it("POST answers 201 with Location and the stored route; GET returns the same bytes", async () => {
      const created = await send(post(sample))
      assert.strictEqual(created.status, 201, created.text)
      assert.strictEqual(created.headers.get("content-type"), "application/json")
      assert.isTrue(Route.isRouteId(created.json.id))
      assert.strictEqual(created.headers.get("location"), `/v1/routing/${created.json.id}`)
      assert.deepStrictEqual(Object.keys(created.json), ["id", "method", "path", "middleware", "handler", "createdAt"])
      assert.deepStrictEqual({ ...created.json, id: "", createdAt: "" }, { ...sample, id: "", createdAt: "" })
      assert.match(created.json.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      const found = await send(get(created.json.id))
      assert.strictEqual(found.status, 200)
      assert.strictEqual(found.headers.get("content-type"), "application/json")
      assert.strictEqual(found.text, created.text)
    })

    it("omitted middleware is stored and returned as []", async () => {
      const created = await send(post({ method: "GET", path: "/", handler: "root" }))
      assert.deepStrictEqual(created.json.middleware, [])
      assert.deepStrictEqual((await send(get(created.json.id))).json.middleware, [])
    })

    for (
      const { body, name } of accepted.filter((s) => /percent|2048|names of every|order/.test(s.name) && fits(s.body))
    ) {
      it(`round-trips byte for byte: ${name}`, async () => {
        const created = await send(post(body))
        assert.strictEqual(created.status, 201, created.text)
        const found = await send(get(created.json.id))
        assert.deepStrictEqual(found.json, {
          middleware: [],
          ...body,
          id: created.json.id,
          createdAt: created.json.createdAt
        })
      })
    }

    it("a write-only token creates; a read-only token gets", async () => {
      const created = await send(post(sample, { ...auth(WRITER), ...json }))
      assert.strictEqual(created.status, 201)
      assert.strictEqual((await send(get(created.json.id, auth(READER)))).status, 200)
    })

    it("charset and other media-type parameters are accepted", async () => {
      const created = await send(post(sample, { ...auth(ADMIN), "content-type": "Application/JSON; charset=UTF-8" }))
      assert.strictEqual(created.status, 201, created.text)
    })
  })

  describe("authentication (RFC 6750)", () => {
    it("no Authorization header: 401 unauthenticated, challenge without error", async () => {
      const response = await send(get(Route.makeRouteId(0), {}))
      assertProblem(response, "unauthenticated")
      assert.strictEqual(challenge(response), "Bearer realm=\"routing\"")
    })

    for (const header of ["Basic YWRtaW46YWRtaW4=", "Token admin-token", "Bearerx admin-token", `Digest ${ADMIN}`]) {
      it(`another scheme (${header.split(" ")[0]}): 401 unauthenticated`, async () => {
        const response = await send(post(sample, { authorization: header, ...json }))
        assertProblem(response, "unauthenticated")
        assert.strictEqual(challenge(response), "Bearer realm=\"routing\"")
      })
    }

    for (const header of ["Bearer", "bearer ", "Bearer a b", "Bearer a,b", "Bearer =abc", "Bearer é"]) {
      it(`malformed credential ${JSON.stringify(header)}: 400 invalid_request`, async () => {
        const response = await send(get(Route.makeRouteId(0), { authorization: header }))
        assertProblem(response, "invalid_request")
        assert.strictEqual(challenge(response), "Bearer realm=\"routing\", error=\"invalid_request\"")
      })
    }

    for (const token of ["unknown", `${ADMIN}x`, ADMIN.slice(0, -1), ADMIN.toUpperCase()]) {
      it(`unknown token ${JSON.stringify(token)}: 401 invalid_token`, async () => {
        const response = await send(get(Route.makeRouteId(0), auth(token)))
        assertProblem(response, "invalid_token")
        assert.strictEqual(challenge(response), "Bearer realm=\"routing\", error=\"invalid_token\"")
      })
    }

    it("the scheme name is case-insensitive", async () => {
      for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
        const response = await send(
          post({ ...sample, path: `/${scheme}` }, { authorization: `${scheme} ${ADMIN}`, ...json })
        )
        assert.strictEqual(response.status, 201, response.text)
      }
    })

    it("a token in the query string is ignored", async () => {
      const response = await send({ method: "GET", path: `/v1/routing/${Route.makeRouteId(0)}?access_token=${ADMIN}` })
      assertProblem(response, "unauthenticated")
    })

    it("a read-only token cannot create: 403 insufficient_scope naming routes:write", async () => {
      const response = await send(post(sample, { ...auth(READER), ...json }))
      assertProblem(response, "insufficient_scope")
      assert.strictEqual(
        challenge(response),
        "Bearer realm=\"routing\", error=\"insufficient_scope\", scope=\"routes:write\""
      )
    })

    it("a write-only token cannot get: 403 insufficient_scope naming routes:read", async () => {
      const response = await send(get(Route.makeRouteId(0), auth(WRITER)))
      assertProblem(response, "insufficient_scope")
      assert.strictEqual(
        challenge(response),
        "Bearer realm=\"routing\", error=\"insufficient_scope\", scope=\"routes:read\""
      )
    })

    it("a refused request changes nothing", async () => {
      assert.strictEqual((await send(post(sample, { ...auth(READER), ...json }))).status, 403)
      assert.strictEqual((await send(post(sample, { ...auth("nope"), ...json }))).status, 401)
      assert.strictEqual((await send(post(sample))).status, 201)
    })
  })

  describe("body", () => {
    for (
      const [name, headers] of [
        ["text/plain", { ...auth(ADMIN), "content-type": "text/plain" }],
        ["application/jsonx", { ...auth(ADMIN), "content-type": "application/jsonx" }],
        ["a charset other than UTF-8", { ...auth(ADMIN), "content-type": "application/json; charset=latin1" }],
        ["form data", { ...auth(ADMIN), "content-type": "application/x-www-form-urlencoded" }]
      ] as const
    ) {
      it(`${name}: 415 unsupported_media_type`, async () => {
        assertProblem(await send(post(sample, headers)), "unsupported_media_type")
      })
    }

    it("no Content-Type: 415 unsupported_media_type", async () => {
      const body = new TextEncoder().encode(JSON.stringify(sample)) // a byte body gets no Content-Type from fetch
      assertProblem(await send({ ...post(sample, auth(ADMIN)), body }), "unsupported_media_type")
    })

    for (
      const [name, text] of [["truncated", "{\"method\": \"GET\""], ["empty", ""], ["not JSON", "method=GET"], [
        "a trailing comma",
        "{\"method\":\"GET\",}"
      ]] as const
    ) {
      it(`${name} body: 400 malformed_json`, async () => {
        assertProblem(await send(post(text)), "malformed_json")
      })
    }

    it("bytes that are not UTF-8: 400 malformed_json", async () => {
      assertProblem(await send({ ...post(sample), body: new Uint8Array([0x7b, 0xff, 0x7d]) }), "malformed_json")
    })

    for (const value of [null, [], "text", 1, true]) {
      it(`JSON ${JSON.stringify(value)}: 400 invalid_route`, async () => {
        const response = await send(post(JSON.stringify(value)))
        assertProblem(response, "invalid_route", ["errors"])
        assert.deepStrictEqual(response.json.errors.map((e: { path: string }) => e.path), [""])
      })
    }

    for (
      const { body, errors, name } of refused.filter((s) =>
        typeof s.body === "object" && s.body !== null && fits(s.body)
      )
    ) {
      it(`invalid_route lists every problem: ${name}`, async () => {
        const response = await send(post(body))
        assertProblem(response, "invalid_route", ["errors"])
        assert.deepStrictEqual(response.json.errors.map((e: { path: string }) => e.path), errors.map(([path]) => path))
        errors.forEach(([, fragment], i) => assert.include(response.json.errors[i].message, fragment))
        for (const error of response.json.errors) assert.deepStrictEqual(Object.keys(error), ["path", "message"])
      })
    }
  })

  limitRows(send, options)
}

/** The rows of a body at the limit and over it, declared or streamed: what a configured body limit changes. */
const limitRows = (send: Send, options?: RoutingHandler.Options) => {
  describe("limits", () => {
    const limit = limitOf(options)
    const padded = (size: number) => {
      const base = JSON.stringify({ ...sample, handler: "" })
      return JSON.stringify({ ...sample, handler: "h".repeat(size - base.length) })
    }

    it("a body of exactly the limit is read (and judged on its content)", async () => {
      const response = await send(post(padded(limit)))
      assert.strictEqual(Buffer.byteLength(padded(limit)), limit)
      assertProblem(response, "invalid_route", ["errors"]) // the handler name is far over 128 characters
    })

    it("Content-Length over the limit: 413 payload_too_large, answered", async () => {
      const response = await send(post(padded(limit + 1)))
      assertProblem(response, "payload_too_large")
    })

    it("a streamed body that grows past the limit: 413 payload_too_large, answered", async () => {
      const chunk = new TextEncoder().encode(" ".repeat(16 * 1024))
      let sent = 0
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent > limit * 4) return controller.close()
          sent += chunk.length
          controller.enqueue(chunk)
        }
      })
      const response = await send({ ...post(sample), body })
      assertProblem(response, "payload_too_large")
    })
  })
}

/**
 * The rows of create and get, and the rules they share with every request: what the benchmark peers, which serve
 * only create and get, pass as well.
 */
export const createGetContract = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  const send = serving(adapter, store, options)
  requestRows(send, options)
  describe("slow clients", () => {
    it("a body that stalls past the body timeout: 408 request_timeout, answered and the connection closed", async () => {
      const slow = await adapter.start(Layer.merge(store, tokens), { ...options, bodyTimeoutMillis: 300 })
      onTestFinished(() => slow.close())
      const response = await slow.send({ ...post(sample), body: stalledBody() })
      assertProblem(response, "request_timeout")
      assert.strictEqual(response.headers.get("connection"), "close")
      assert.strictEqual((await slow.send(post(sample))).status, 201) // the server goes on serving
    })
  })

  describe("store outcomes", () => {
    it("unknown id: 404 route_not_found", async () => {
      assertProblem(await send(get(Route.makeRouteId(Date.now()))), "route_not_found")
    })

    for (const id of ["not-a-uuid", "0b9f6a0e-1f2a-4c3b-8d4e-5f6a7b8c9d0e", "%27%3B%20DROP", "x".repeat(300), ""]) {
      it(`an id that could never exist (${JSON.stringify(id.slice(0, 20))}): 404 route_not_found`, async () => {
        assertProblem(await send(get(id)), "route_not_found")
      })
    }

    it("same method and shape: 409 route_conflict naming the stored route", async () => {
      const first = await send(post(sample))
      const second = await send(post({ ...sample, path: "/users/:userId", handler: "other" }))
      assertProblem(second, "route_conflict", ["conflictingRouteId"])
      assert.strictEqual(second.json.conflictingRouteId, first.json.id)
    })

    it("same method, shape and conditions written differently: 409 route_conflict naming them, that they compare as a set, and the fix", async () => {
      const when = { headers: [{ name: "X-Version", value: "2" }, { name: "accept" }] }
      const first = await send(post({ ...sample, when }))
      assert.strictEqual(first.status, 201, first.text)
      const reordered = { headers: [{ name: "Accept" }, { name: "x-version", value: "2" }] }
      const second = await send(post({ ...sample, path: "/users/:userId", when: reordered }))
      assertProblem(second, "route_conflict", ["conflictingRouteId"])
      assert.strictEqual(second.json.conflictingRouteId, first.json.id)
      assert.strictEqual(
        second.json.detail,
        `GET /users/:userId with the conditions {"headers":[{"name":"accept"},{"name":"x-version","value":"2"}]} ` +
          `has the same method, shape and conditions as route ${first.json.id}: a router could not tell them apart. ` +
          "Conditions compare as a set (header names in any case, the lists in any order), so a when written " +
          `differently may still be the same: change this route's when, method or path, or update route ` +
          `${first.json.id} instead.`
      )
    })

    it("a static segment beside a parameter, and another method, do not conflict", async () => {
      assert.strictEqual((await send(post(sample))).status, 201)
      assert.strictEqual((await send(post({ ...sample, path: "/users/me" }))).status, 201)
      assert.strictEqual((await send(post({ ...sample, method: "DELETE" }))).status, 201)
    })

    it("concurrent creates of one shape: exactly one 201, every other 409 naming it", async () => {
      const responses = await Promise.all(
        Array.from({ length: 25 }, (_, i) => send(post({ ...sample, path: `/race/:p${i}` })))
      )
      const created = responses.filter((r) => r.status === 201)
      assert.strictEqual(created.length, 1)
      for (const r of responses.filter((r) => r.status !== 201)) {
        assertProblem(r, "route_conflict", ["conflictingRouteId"])
        assert.strictEqual(r.json.conflictingRouteId, created[0]!.json.id)
      }
    })
  })

  describe("methods", () => {
    for (const method of ["PUT", "PATCH", "DELETE", "OPTIONS"]) {
      it(`${method} /v1/routing: 405 with Allow: GET, POST`, async () => {
        const response = await send({ method, path: "/v1/routing", headers: auth(ADMIN) })
        assertProblem(response, "method_not_allowed")
        assert.strictEqual(response.headers.get("allow"), "GET, POST")
      })
    }
    for (const method of ["POST", "PUT", "OPTIONS"]) {
      it(`${method} /v1/routing/{id}: 405 with Allow: GET, PATCH, DELETE`, async () => {
        const response = await send({ method, path: `/v1/routing/${Route.makeRouteId(0)}`, headers: auth(ADMIN) })
        assertProblem(response, "method_not_allowed")
        assert.strictEqual(response.headers.get("allow"), "GET, PATCH, DELETE")
      })
    }
  })

  describe("the order of checks", () => {
    it("method before authentication", async () => {
      assertProblem(await send({ method: "DELETE", path: "/v1/routing" }), "method_not_allowed")
    })
    it("authentication before the body: an unauthenticated caller learns nothing about its JSON", async () => {
      assertProblem(await send(post("{not json", json)), "unauthenticated")
      assertProblem(await send(post("{not json", { ...auth("nope"), ...json })), "invalid_token")
    })
    it("scope before content type", async () => {
      assertProblem(await send(post("x", { ...auth(READER), "content-type": "text/plain" })), "insufficient_scope")
    })
    sizeOrderRows(send, options)
    it("JSON before the body rules", async () => {
      assertProblem(await send(post("{\"method\": \"get\",")), "malformed_json")
    })
    it("the body rules before the store", async () => {
      assert.strictEqual((await send(post(sample))).status, 201)
      assertProblem(await send(post({ ...sample, extra: 1 })), "invalid_route", ["errors"]) // not 409
    })
  })
}

/** Where the size check stands among the checks of a POST: after the content type, before the JSON. */
const sizeOrderRows = (send: Send, options?: RoutingHandler.Options) => {
  it("content type before size", async () => {
    assertProblem(
      await send(post("x".repeat(limitOf(options) + 10), { ...auth(ADMIN), "content-type": "text/plain" })),
      "unsupported_media_type"
    )
  })
  it("size before JSON", async () => {
    assertProblem(await send(post("{".repeat(limitOf(options) + 10))), "payload_too_large")
  })
}

/**
 * The rows whose outcome a configured body limit changes: a body at the limit and over it, and where the size check
 * stands among the others, on POST and (`updates`) on PATCH. Every other row sends bodies far under any limit a test
 * configures, so it answers alike whatever the limit: the whole contract runs at the default one.
 */
export const limitContract = (adapter: Adapter, store: Store, options: RoutingHandler.Options, updates = true) => {
  const send = serving(adapter, store, options)
  limitRows(send, options)
  describe("the order of checks", () => sizeOrderRows(send, options))
  if (updates) describe("the order of checks on PATCH", () => patchOrderRow(send, options))
}

export const patch = (
  id: string,
  body: unknown,
  headers: Record<string, string> = { ...auth(ADMIN), ...json }
): Sent => ({
  method: "PATCH",
  path: `/v1/routing/${id}`,
  headers,
  body: typeof body === "string" ? body : JSON.stringify(body)
})

export const remove = (id: string, headers: Record<string, string> = auth(ADMIN)): Sent => ({
  method: "DELETE",
  path: `/v1/routing/${id}`,
  headers
})

export const list = (query = "", headers: Record<string, string> = auth(ADMIN)): Sent => ({
  method: "GET",
  path: `/v1/routing${query === "" ? "" : `?${query}`}`,
  headers
})

const createOn = async (send: Send, body: Record<string, unknown> = sample) => {
  const response = await send(post(body))
  assert.strictEqual(response.status, 201, response.text)
  return response
}

const paths = (response: Received): Array<string> => response.json.errors.map((e: { path: string }) => e.path)

/** Listing, update, delete and versions (docs/http-api.md: "Listing", "Updating", "Deleting"), and the rules they bring. */
export const changeContract = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  const send = serving(adapter, store, options)
  logRows(send)
  const create = (body: Record<string, unknown> = sample) => createOn(send, body)

  it("a huge invalid body: at most Route.MAX_ISSUES problems, and the detail says there may be more", async () => {
    const body = { ...sample, middleware: Array.from({ length: 400 }, () => "bad name") }
    if (JSON.stringify(body).length >= limitOf(options)) return
    const response = await send(post(body))
    assertProblem(response, "invalid_route", ["errors"])
    assert.strictEqual(response.json.errors.length, Route.MAX_ISSUES)
    assert.include(response.json.detail, `at least ${Route.MAX_ISSUES}`)
  })

  describe("versions (ETag)", () => {
    it("201, GET 200 and PATCH 200 carry a strong ETag that changes only when the route changes", async () => {
      const created = await create()
      const tag = created.headers.get("etag")!
      assert.match(tag, /^"[^"]+"$/)
      assert.strictEqual((await send(get(created.json.id))).headers.get("etag"), tag)
      const same = await send(patch(created.json.id, { handler: sample.handler }))
      assert.strictEqual(same.status, 200, same.text)
      assert.strictEqual(same.headers.get("etag"), tag)
      const changed = await send(patch(created.json.id, { handler: "other" }))
      assert.strictEqual(changed.status, 200)
      assert.notStrictEqual(changed.headers.get("etag"), tag)
      assert.strictEqual((await send(get(created.json.id))).headers.get("etag"), changed.headers.get("etag"))
    })

    for (const form of ["current", "weak", "list", "*"] as const) {
      it(`GET with If-None-Match (${form}) naming the route: 304 with the ETag and no body`, async () => {
        const created = await create()
        const tag = created.headers.get("etag")!
        const header = form === "current" ? tag : form === "weak" ? `W/${tag}` : form === "list" ? `"x", ${tag}` : "*"
        const response = await send(get(created.json.id, { ...auth(ADMIN), "if-none-match": header }))
        assert.strictEqual(response.status, 304)
        assert.strictEqual(response.headers.get("etag"), tag)
        assert.strictEqual(response.text, "")
      })
    }

    it("GET with If-None-Match naming another version: 200; an unknown id is still 404", async () => {
      const created = await create()
      const response = await send(get(created.json.id, { ...auth(ADMIN), "if-none-match": "\"nope\"" }))
      assert.strictEqual(response.status, 200)
      assertProblem(
        await send(get(Route.makeRouteId(0), { ...auth(ADMIN), "if-none-match": "*" })),
        "route_not_found"
      )
    })
  })

  describe("listing", () => {
    const routes = [
      { method: "GET", path: "/users/:id", middleware: ["auth"], handler: "show" },
      { method: "POST", path: "/users", middleware: ["auth", "audit"], handler: "create" },
      { method: "GET", path: "/orders/:id", middleware: [], handler: "show" },
      { method: "DELETE", path: "/users/:id", middleware: ["audit"], handler: "destroy" },
      { method: "GET", path: "/a b/x".replace(" ", "+"), middleware: [], handler: "plus" }
    ]
    const seed = async () => {
      const ids: Array<string> = []
      for (const route of routes) ids.push((await create(route)).json.id)
      return ids
    }
    const idsOf = (response: Received): Array<string> => response.json.items.map((r: { id: string }) => r.id)

    it("an empty store: 200 {items: [], nextCursor: null}, exactly", async () => {
      const response = await send(list())
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("content-type"), "application/json")
      assert.strictEqual(response.text, "{\"items\":[],\"nextCursor\":null}")
      assert.isNull(response.headers.get("link"))
    })

    it("every route in ascending id order, each as GET returns it", async () => {
      const ids = await seed()
      const response = await send(list())
      assert.deepStrictEqual(Object.keys(response.json), ["items", "nextCursor"])
      assert.deepStrictEqual(idsOf(response), [...ids].sort())
      assert.isNull(response.json.nextCursor)
      assert.strictEqual(JSON.stringify(response.json.items[0]), (await send(get([...ids].sort()[0]!))).text)
    })

    for (
      const [query, expected] of ([
        ["method=GET", [0, 2, 4]],
        ["pathPrefix=/users", [0, 1, 3]],
        ["pathPrefix=/users/", [0, 3]],
        ["handler=show", [0, 2]],
        ["middleware=audit", [1, 3]],
        ["method=GET&handler=show&pathPrefix=/orders", [2]],
        ["method=GET&middleware=auth", [0]],
        ["method=PUT", []],
        ["pathPrefix=/a+b", []],
        ["pathPrefix=/a%2Bb", [4]],
        ["pathPrefix=%2Fusers%2F%3A", [0, 3]],
        // q: in the path, the handler or a middleware name
        ["q=users", [0, 1, 3]],
        ["q=aud", [1, 3]],
        ["q=sho", [0, 2]],
        ["q=rs/:", [0, 2, 3]],
        ["q=%2B", [4]],
        ["q=a+b", []],
        ["q=auth&method=POST", [1]],
        ["q=o&pathPrefix=/orders&middleware=audit", []]
      ] as const)
    ) {
      it(`filters combine with AND: ${query}`, async () => {
        const ids = await seed()
        const response = await send(list(query))
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(idsOf(response), expected.map((i) => ids[i]!).sort())
      })
    }

    it("a walk with limit follows nextCursor and Link to the end, every route once", async () => {
      const ids = await seed()
      const seen: Array<string> = []
      let target = "/v1/routing?limit=2&middleware=audit"
      const filtered = [ids[1]!, ids[3]!].sort()
      let pages = 0
      for (;;) {
        const response = await send({ method: "GET", path: target, headers: auth(ADMIN) })
        assert.strictEqual(response.status, 200, response.text)
        pages++
        seen.push(...idsOf(response))
        if (response.json.nextCursor === null) {
          assert.isNull(response.headers.get("link"))
          break
        }
        const link = /^<([^>]+)>; rel="next"$/.exec(response.headers.get("link") ?? "")
        assert.isNotNull(link, response.headers.get("link") ?? "no Link")
        const next = new URL(link![1]!, "http://x")
        assert.strictEqual(next.pathname, "/v1/routing")
        assert.strictEqual(next.searchParams.get("limit"), "2")
        assert.strictEqual(next.searchParams.get("middleware"), "audit")
        assert.strictEqual(next.searchParams.get("cursor"), response.json.nextCursor)
        target = link![1]!
      }
      assert.deepStrictEqual(seen, filtered)
      assert.strictEqual(pages, 1 + Number(filtered.length > 2))
      const all: Array<string> = []
      let cursor: string | null = null
      do {
        const response: Received = await send(list(`limit=1${cursor === null ? "" : `&cursor=${cursor}`}`))
        assert.isAtMost(response.json.items.length, 1)
        all.push(...idsOf(response))
        cursor = response.json.nextCursor
      } while (cursor !== null)
      assert.deepStrictEqual(all, [...ids].sort())
    })

    it("the Link of the longest filters the rules allow stays under 8 KiB, and leads to the next page", async () => {
      // Every value at its longest, in characters the query must percent-encode (three bytes each).
      const method = "M".repeat(Route.MAX_METHOD_LENGTH)
      const name = "$".repeat(Route.MAX_NAME_LENGTH)
      const prefix = "/" + "$".repeat(Route.MAX_PATH_LENGTH - 2)
      const bodies = ["a", "b"].map((last) => ({ method, path: prefix + last, middleware: [name], handler: name }))
      if (JSON.stringify(bodies[0]).length >= limitOf(options)) return
      const ids = [(await create(bodies[0]!)).json.id, (await create(bodies[1]!)).json.id].sort()
      const q = "$".repeat(Route.MAX_NAME_LENGTH)
      const query = new URLSearchParams({
        limit: "1",
        method,
        pathPrefix: prefix,
        handler: name,
        middleware: name,
        q
      })
      const first = await send(list(query.toString()))
      assert.deepStrictEqual(idsOf(first), [ids[0]])
      const link = first.headers.get("link")!
      assert.isAbove(link.length, 7000)
      assert.isBelow(Buffer.byteLength(link), 8 * 1024)
      const next = await send({ method: "GET", path: /^<([^>]+)>/.exec(link)![1]!, headers: auth(ADMIN) })
      assert.deepStrictEqual(idsOf(next), [ids[1]])
    })

    it("nextCursor is null exactly when no route follows: a full last page ends the walk", async () => {
      await create(routes[0])
      await create(routes[1])
      const page = await send(list("limit=2"))
      assert.strictEqual(page.json.items.length, 2)
      assert.isNull(page.json.nextCursor)
    })

    for (const limit of ["1", "1000", "0001"]) {
      it(`limit=${limit} is accepted`, async () => {
        assert.strictEqual((await send(list(`limit=${limit}`))).status, 200)
      })
    }

    for (
      const [query, expected] of [
        ["limit=0", ["limit"]],
        ["limit=1001", ["limit"]],
        ["limit=-1", ["limit"]],
        ["limit=1.5", ["limit"]],
        ["limit=1e2", ["limit"]],
        ["limit=+5", ["limit"]],
        ["limit=", ["limit"]],
        ["cursor=nope!", ["cursor"]],
        ["cursor=", ["cursor"]],
        ["method=get", ["method"]],
        ["pathPrefix=users", ["pathPrefix"]],
        ["handler=a%20b", ["handler"]],
        ["middleware=", ["middleware"]],
        ["q=", ["q"]],
        [`q=${"a".repeat(257)}`, ["q"]],
        ["q=a&q=b", ["q"]],
        ["limit=5&limit=6", ["limit"]],
        ["access_token=admin-token", ["access_token"]],
        ["sort=id", ["sort"]],
        ["limit=0&method=get&pathPrefix=x&handler=&middleware=-&cursor=%%&foo=1", [
          "foo",
          "limit",
          "cursor",
          "method",
          "pathPrefix",
          "handler",
          "middleware"
        ]]
      ] as const
    ) {
      it(`${query}: 400 invalid_query naming ${expected.join(", ")}`, async () => {
        const response = await send(list(query))
        assertProblem(response, "invalid_query", ["errors"])
        assert.sameMembers(paths(response), [...expected])
        for (const error of response.json.errors) assert.deepStrictEqual(Object.keys(error), ["path", "message"])
      })
    }

    it("a cursor of another form, or naming no route id, is invalid_query", async () => {
      const notAnId = Buffer.from("not-a-route-id").toString("base64url")
      assertProblem(await send(list(`cursor=${notAnId}`)), "invalid_query", ["errors"])
    })

    it("a cursor from one filter works with another", async () => {
      const ids = await seed()
      const first = await send(list("limit=1"))
      const rest = await send(list(`cursor=${first.json.nextCursor}&method=GET`))
      assert.deepStrictEqual(idsOf(rest), [ids[0]!, ids[2]!, ids[4]!].sort().filter((id) => id > idsOf(first)[0]!))
    })

    it("the scope: routes:read lists, routes:write alone does not", async () => {
      assert.strictEqual((await send(list("", auth(READER)))).status, 200)
      assertProblem(await send(list("", auth(WRITER))), "insufficient_scope")
    })

    it("authentication and scope before the query", async () => {
      assertProblem(await send(list("limit=0", {})), "unauthenticated")
      assertProblem(await send(list("limit=0", auth(WRITER))), "insufficient_scope")
      assertProblem(await send(list(`access_token=${ADMIN}`, {})), "unauthenticated")
    })
  })

  describe("update (PATCH)", () => {
    for (
      const [field, value] of [
        ["method", "PUT"],
        ["path", "/members/:id"],
        ["middleware", ["trace", "auth"]],
        ["middleware", []],
        ["handler", "Members#show"]
      ] as const
    ) {
      it(`${field}: ${JSON.stringify(value)} replaces that field only`, async () => {
        const created = await create()
        const response = await send(patch(created.json.id, { [field]: value }))
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(response.headers.get("content-type"), "application/json")
        assert.deepStrictEqual(response.json, { ...created.json, [field]: value })
        assert.deepStrictEqual(Object.keys(response.json), Object.keys(created.json))
        assert.strictEqual((await send(get(created.json.id))).text, response.text)
      })
    }

    it("several fields at once, with application/merge-patch+json", async () => {
      const created = await create()
      const response = await send(
        patch(created.json.id, { method: "POST", path: "/users", middleware: ["x"] }, {
          ...auth(ADMIN),
          "content-type": "application/merge-patch+json; charset=utf-8"
        })
      )
      assert.strictEqual(response.status, 200, response.text)
      assert.deepStrictEqual(response.json, { ...created.json, method: "POST", path: "/users", middleware: ["x"] })
    })

    for (
      const [name, body, expected] of [
        ["{}", {}, [""]],
        ["null for a field", { handler: null }, ["handler"]],
        ["null middleware", { middleware: null }, ["middleware"]],
        ["id", { id: Route.makeRouteId(0) }, ["id"]],
        ["createdAt", { createdAt: "2020-01-01T00:00:00.000Z" }, ["createdAt"]],
        ["an unknown field", { middlewares: [] }, ["middlewares"]],
        ["a bad method and path", { method: "get", path: "/a//b" }, ["method", "path"]]
      ] as const
    ) {
      it(`${name}: 400 invalid_route naming ${expected.join(", ")}`, async () => {
        const created = await create()
        const response = await send(patch(created.json.id, body))
        assertProblem(response, "invalid_route", ["errors"])
        assert.deepStrictEqual(paths(response), [...expected])
        assert.strictEqual((await send(get(created.json.id))).text, created.text)
      })
    }

    for (const value of [null, [], "text", 1]) {
      it(`JSON ${JSON.stringify(value)}: 400 invalid_route`, async () => {
        const created = await create()
        assertProblem(await send(patch(created.json.id, JSON.stringify(value))), "invalid_route", ["errors"])
      })
    }

    it("text/plain: 415; application/merge-patch+json is refused on POST", async () => {
      const created = await create()
      assertProblem(
        await send(patch(created.json.id, { handler: "x" }, { ...auth(ADMIN), "content-type": "text/plain" })),
        "unsupported_media_type"
      )
      assertProblem(
        await send(post(sample, { ...auth(ADMIN), "content-type": "application/merge-patch+json" })),
        "unsupported_media_type"
      )
    })

    it("an unknown id: 404 route_not_found", async () => {
      assertProblem(await send(patch(Route.makeRouteId(0), { handler: "x" })), "route_not_found")
      assertProblem(await send(patch("not-an-id", { handler: "x" })), "route_not_found")
    })

    it("onto another route's method and shape: 409 naming it, nothing changed", async () => {
      const first = await create()
      const second = await create({ ...sample, path: "/members/:id" })
      const response = await send(patch(second.json.id, { path: "/users/:userId" }))
      assertProblem(response, "route_conflict", ["conflictingRouteId"])
      assert.strictEqual(response.json.conflictingRouteId, first.json.id)
      assert.strictEqual((await send(get(second.json.id))).text, second.text)
    })

    it("If-Match: the current tag, *, or a list naming it succeeds", async () => {
      const created = await create()
      let tag = created.headers.get("etag")!
      for (const header of [tag, "*", `"x", TAG`]) {
        const response = await send(
          patch(created.json.id, { handler: `h${header.length}` }, {
            ...auth(ADMIN),
            ...json,
            "if-match": header.replace("TAG", tag)
          })
        )
        assert.strictEqual(response.status, 200, `${header}: ${response.text}`)
        tag = response.headers.get("etag")!
      }
    })

    for (const form of ["stale", "weak", "garbage"] as const) {
      it(`If-Match (${form}) naming no current tag: 412 precondition_failed, nothing changed`, async () => {
        const created = await create()
        const tag = created.headers.get("etag")!
        if (form === "stale") await send(patch(created.json.id, { handler: "changed" }))
        const before = await send(get(created.json.id))
        const header = form === "stale" ? tag : form === "weak" ? `W/${tag}` : "not a tag"
        const response = await send(
          patch(created.json.id, { handler: "x" }, { ...auth(ADMIN), ...json, "if-match": header })
        )
        assertProblem(response, "precondition_failed")
        assert.strictEqual((await send(get(created.json.id))).text, before.text)
      })
    }

    it("the order: 404 before 412 before 409", async () => {
      const first = await create()
      const second = await create({ ...sample, path: "/members/:id" })
      const stale = { ...auth(ADMIN), ...json, "if-match": "\"999999\"" }
      assertProblem(await send(patch(Route.makeRouteId(0), { path: "/users/:x" }, stale)), "route_not_found")
      assertProblem(await send(patch(second.json.id, { path: "/users/:x" }, stale)), "precondition_failed")
      const conflict = await send(patch(second.json.id, { path: "/users/:x" }))
      assertProblem(conflict, "route_conflict", ["conflictingRouteId"])
      assert.strictEqual(conflict.json.conflictingRouteId, first.json.id)
    })

    it("the scope: routes:write updates, routes:read alone does not", async () => {
      const created = await create()
      assertProblem(
        await send(patch(created.json.id, { handler: "x" }, { ...auth(READER), ...json })),
        "insufficient_scope"
      )
      assert.strictEqual(
        (await send(patch(created.json.id, { handler: "x" }, { ...auth(WRITER), ...json }))).status,
        200
      )
    })

    it("50 concurrent PATCHes onto one shape: exactly one 200, the others 409 naming it", async () => {
      const ids: Array<string> = []
      for (let i = 0; i < 50; i++) ids.push((await create({ ...sample, path: `/p${i}/:id` })).json.id)
      const responses = await Promise.all(ids.map((id) => send(patch(id, { path: "/target/:id" }))))
      const won = responses.filter((r) => r.status === 200)
      assert.strictEqual(won.length, 1)
      for (const r of responses.filter((r) => r.status !== 200)) {
        assertProblem(r, "route_conflict", ["conflictingRouteId"])
        assert.strictEqual(r.json.conflictingRouteId, won[0]!.json.id)
      }
    })

    it("concurrent PATCHes with the same If-Match: exactly one 200, the others 412", async () => {
      const created = await create()
      const tag = created.headers.get("etag")!
      const responses = await Promise.all(
        Array.from(
          { length: 20 },
          (_, i) => send(patch(created.json.id, { handler: `h${i}` }, { ...auth(ADMIN), ...json, "if-match": tag }))
        )
      )
      assert.strictEqual(responses.filter((r) => r.status === 200).length, 1)
      for (const r of responses.filter((r) => r.status !== 200)) assertProblem(r, "precondition_failed")
    })
  })

  describe("delete", () => {
    it("204 with no body; a second delete is 404; the shape is free again", async () => {
      const created = await create()
      const response = await send(remove(created.json.id))
      assert.strictEqual(response.status, 204)
      assert.strictEqual(response.text, "")
      assert.isNull(response.headers.get("content-type"))
      assertProblem(await send(get(created.json.id)), "route_not_found")
      assertProblem(await send(remove(created.json.id)), "route_not_found")
      assert.strictEqual((await send(post({ ...sample, path: "/users/:other" }))).status, 201)
    })

    it("an id that never existed: 404", async () => {
      assertProblem(await send(remove(Route.makeRouteId(0))), "route_not_found")
      assertProblem(await send(remove("nope")), "route_not_found")
    })

    it("If-Match: a stale tag is 412 and the route stays; the current one deletes", async () => {
      const created = await create()
      const updated = await send(patch(created.json.id, { handler: "x" }))
      const stale = await send(remove(created.json.id, { ...auth(ADMIN), "if-match": created.headers.get("etag")! }))
      assertProblem(stale, "precondition_failed")
      assert.strictEqual((await send(get(created.json.id))).status, 200)
      const current = await send(remove(created.json.id, { ...auth(ADMIN), "if-match": updated.headers.get("etag")! }))
      assert.strictEqual(current.status, 204)
      assertProblem(
        await send(remove(created.json.id, { ...auth(ADMIN), "if-match": "*" })),
        "route_not_found"
      )
    })

    it("the scope: routes:write deletes, routes:read alone does not", async () => {
      const created = await create()
      assertProblem(await send(remove(created.json.id, auth(READER))), "insufficient_scope")
      assertProblem(await send(remove(created.json.id, {})), "unauthenticated")
      assert.strictEqual((await send(remove(created.json.id, auth(WRITER)))).status, 204)
    })
  })

  describe("the order of checks on PATCH", () => {
    it("authentication before the body, scope before the content type", async () => {
      const id = (await create()).json.id
      assertProblem(await send(patch(id, "{not json", json)), "unauthenticated")
      assertProblem(await send(patch(id, "x", { ...auth(READER), "content-type": "text/plain" })), "insufficient_scope")
    })
    patchOrderRow(send, options)
  })

  describe("the method bound", () => {
    const MAX = RouteRepository.MAX_METHODS
    it(`at most ${MAX} distinct methods: one more is 409 too_many_methods on create and PATCH, nothing written`, async () => {
      // Created a few at a time, as clients would.
      for (let i = 0; i < MAX; i += 16) {
        await Promise.all(
          Array.from(
            { length: Math.min(16, MAX - i) },
            (_, j) => create({ ...sample, method: methodName(i + j), path: "/methods" })
          )
        )
      }
      const refused = await send(post({ ...sample, method: "ONE-MORE" }))
      assertProblem(refused, "too_many_methods")
      assert.include(refused.json.detail, `${MAX} distinct methods`)
      assert.match(refused.json.detail, /delete the routes of/)
      // The method of `second` stays stored by its first route: moving it would add a method.
      const second = await create({ ...sample, method: methodName(0), path: "/second" })
      assertProblem(await send(patch(second.json.id, { method: "ONE-MORE" })), "too_many_methods")
      assert.strictEqual((await send(get(second.json.id))).text, second.text)
      assert.strictEqual((await send(list("limit=1000"))).json.items.length, MAX + 1)
      // A stored method is never refused.
      assert.strictEqual((await send(post({ ...sample, method: methodName(1), path: "/third" }))).status, 201)
    })
  })

  describe("two Authorization headers", () => {
    it("400 invalid_request, whichever comes first", async () => {
      for (const second of [`Bearer ${ADMIN}`, "Basic YTpi", "Bearer nope"]) {
        // Two header lines reach the core joined, as the web Headers joins them (raw lines: the Node adapters' tests).
        const response = await send(list("", { authorization: `Bearer ${ADMIN}, ${second}` }))
        assertProblem(response, "invalid_request")
        assert.strictEqual(challenge(response), "Bearer realm=\"routing\", error=\"invalid_request\"")
      }
    })
  })
}

/** Where the size check stands among the checks of a PATCH. */
const patchOrderRow = (send: Send, options?: RoutingHandler.Options) =>
  it("415 before 413 before malformed_json before invalid_route before the store", async () => {
    const id = (await createOn(send)).json.id
    const big = "{".repeat(limitOf(options) + 10)
    assertProblem(
      await send(patch(id, big, { ...auth(ADMIN), "content-type": "text/plain" })),
      "unsupported_media_type"
    )
    assertProblem(await send(patch(id, big)), "payload_too_large")
    assertProblem(await send(patch(Route.makeRouteId(0), "{")), "malformed_json")
    assertProblem(await send(patch(Route.makeRouteId(0), { id: "x" })), "invalid_route", ["errors"])
  })

const limitOf = (options?: RoutingHandler.Options) => options?.maxBodyBytes ?? RoutingHandler.DEFAULT_MAX_BODY_BYTES

/** A store that fails every call, for the 503 and 500 rows: typed, with a defect, or by throwing. */
export const failingStore = (failure: "unavailable" | "defect" | "throw"): Store => {
  const fail = (sql: string): Effect.Effect<never, RouteRepository.StoreUnavailable> => {
    if (failure === "throw") throw new Error(`boom: ${sql}`)
    return failure === "unavailable"
      ? Effect.fail(new RouteRepository.StoreUnavailable({ reason: "test" }))
      : Effect.die(new Error(`boom: ${sql}`))
  }
  return Layer.succeed(
    RouteRepository.RouteRepository,
    RouteRepository.RouteRepository.of({
      create: () => fail("INSERT INTO secret_table VALUES ('x')"),
      findById: () => fail("SELECT * FROM secret_table WHERE id = 'x'"),
      list: () => fail("SELECT * FROM secret_table ORDER BY id"),
      update: () => fail("UPDATE secret_table SET x = 1"),
      remove: () => fail("DELETE FROM secret_table")
    })
  )
}

/** A body that sends its first bytes and then nothing, never finishing. */
export const stalledBody = (): ReadableStream<Uint8Array> =>
  new ReadableStream({ start: (controller) => controller.enqueue(new TextEncoder().encode("{\"method\": ")) })

/** Drops log output, for tests that provoke errors on purpose. */
export const quiet = Logger.replace(Logger.defaultLogger, Logger.none)

/** The 503 and 500 rows, through one adapter. */
export const failureContract = (adapter: Adapter) => {
  it("the store is unavailable: 503 store_unavailable with Retry-After", async () => {
    const server = await adapter.start(Layer.merge(failingStore("unavailable"), tokens), { retryAfterSeconds: 3 })
    onTestFinished(() => server.close())
    for (const request of everyOperation) {
      const response = await server.send(request)
      assertProblem(response, "store_unavailable")
      assert.strictEqual(response.headers.get("retry-after"), "3")
    }
  })

  it("the Postgres store cannot reach its database: 503 store_unavailable", async () => {
    const store = Layer.effect(RouteRepository.RouteRepository, PgRouteRepository.make()).pipe(
      Layer.provide(TestDatabase.unreachable)
    )
    const server = await adapter.start(Layer.merge(store, tokens))
    onTestFinished(() => server.close())
    for (const request of [post(sample), get(Route.makeRouteId(0))]) {
      const response = await server.send(request)
      assertProblem(response, "store_unavailable")
      assert.strictEqual(response.headers.get("retry-after"), "1")
    }
  })

  for (const failure of ["defect", "throw"] as const) {
    it(`anything unexpected (a store that ${failure === "throw" ? "throws" : "dies"}): 500 internal_error without stack, SQL or token; the cause is logged`, async () => {
      const logged: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ cause, message }) => logged.push(`${message} ${cause}`))
      )
      const server = await adapter.start(Layer.mergeAll(failingStore(failure), tokens, capture))
      onTestFinished(() => server.close())
      for (const request of everyOperation) {
        const response = await server.send(request)
        assertProblem(response, "internal_error")
        for (const leak of ["boom", "secret_table", "SELECT", "INSERT", ADMIN, "at ", ".ts"]) {
          assert.notInclude(response.text, leak)
        }
      }
      assert.strictEqual(logged.length, everyOperation.length)
      assert.include(logged[0], "secret_table")
    })
  }

  for (
    const [option, value] of [["retryAfterSeconds", 1.5], ["maxBodyBytes", 0], ["bodyTimeoutMillis", -1], [
      "maxBodyBytes",
      Number.NaN
    ]] as const
  ) {
    it(`${option}: ${value} is refused when the adapter is made, naming the option and its range`, async () => {
      const error = await adapter.start(Layer.merge(RouteRepository.layerMemory, tokens), { [option]: value }).then(
        (server) => server.close().then(() => "started"),
        (e: unknown) => e
      )
      assert.include(String(error), option)
      assert.include(String(error), "from 1 to")
      if (error instanceof InvalidOption.InvalidOption) assert.strictEqual(error.option, option)
    })
  }

  it("an authenticator that throws: 500 internal_error, logged, and the server goes on serving", async () => {
    const logged: Array<string> = []
    const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ cause }) => logged.push(String(cause))))
    const throwing = Layer.succeed(
      Authenticator.Authenticator,
      Authenticator.Authenticator.of({
        authenticate: () => {
          throw new Error("boom: the identity provider")
        }
      })
    )
    const server = await adapter.start(Layer.mergeAll(RouteRepository.layerMemory, throwing, capture))
    onTestFinished(() => server.close())
    for (const request of [...everyOperation, ...everyOperation]) {
      const response = await server.send(request)
      assertProblem(response, "internal_error")
      assert.notInclude(response.text, "boom")
    }
    assert.strictEqual(logged.length, 2 * everyOperation.length)
    assert.include(logged[0], "identity provider")
  })

  it("a memory store whose unsafeFindById throws: 500 internal_error, logged", async () => {
    const store = Layer.merge(
      Layer.effect(RouteRepository.RouteRepository, RouteRepository.makeMemory),
      Layer.succeed(RouteRepository.MemoryRead, {
        unsafeFindById: () => {
          throw new Error("boom: unsafeFindById")
        }
      })
    )
    const server = await adapter.start(Layer.mergeAll(store, tokens, quiet))
    onTestFinished(() => server.close())
    assertProblem(await server.send(get(Route.makeRouteId(0))), "internal_error")
    assertProblem(await server.send(get(Route.makeRouteId(0))), "internal_error")
  })
}

/**
 * What only a real Node socket shows: two Authorization header lines (Node's `req.headers` keeps only the first), and
 * the status line of a 413.
 */
export const nodeSocketContract = (adapter: Adapter) => {
  let server: Served
  beforeEach(async () => {
    server = await adapter.start(Layer.merge(RouteRepository.layerMemory, tokens))
  })
  afterEach(() => server.close())
  const head = (lines: ReadonlyArray<string>) => lines.map((line) => line + "\r\n").join("")

  it("two Authorization header lines: 400 invalid_request, whichever comes first", async () => {
    for (const [first, second] of [[ADMIN, ADMIN], [ADMIN, "nope"], ["nope", ADMIN]]) {
      const answer = await rawRequest(
        server.origin,
        head([
          "GET /v1/routing HTTP/1.1",
          "Host: x",
          `Authorization: Bearer ${first}`,
          `Authorization: Bearer ${second}`,
          "Connection: close"
        ])
      )
      assert.match(answer, /^HTTP\/1\.1 400 /)
      assert.include(answer, "\"code\":\"invalid_request\"")
      assert.match(answer, /www-authenticate: Bearer realm="routing", error="invalid_request"/i)
    }
  })

  it("a 413 says Content Too Large on its status line, as in its body", async () => {
    const answer = await rawRequest(
      server.origin,
      head([
        "POST /v1/routing HTTP/1.1",
        "Host: x",
        `Authorization: Bearer ${ADMIN}`,
        "Content-Type: application/json",
        "Content-Length: 10000000"
      ])
    )
    assert.match(answer, /^HTTP\/1\.1 413 Content Too Large\r\n/)
    assert.include(answer, "\"title\":\"Content Too Large\"")
  })
}

/** `GET /v1/routing/match` with this query. */
export const match = (query: Record<string, string> | string, headers: Record<string, string> = auth(ADMIN)): Sent => ({
  method: "GET",
  path: `/v1/routing/match?${typeof query === "string" ? query : new URLSearchParams(query)}`,
  headers
})

/**
 * `GET /v1/routing/match` over a route table on the store: the table's decision, with the other routes matching
 * the path, read-your-writes, and its 400s, 401, 403 and 405.
 */
export const matchContract = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  const send = serving(adapter, RouteTable.layer.pipe(Layer.provideMerge(store)), options)
  const seed = async () => {
    const routes: Record<string, any> = {}
    for (const [method, path] of [["GET", "/users/:id"], ["GET", "/users/me"], ["POST", "/users/:id"]]) {
      const response = await send(post({ method, path, handler: "h" }))
      assert.strictEqual(response.status, 201, response.text)
      routes[`${method} ${path}`] = response.json
    }
    return routes
  }
  const KEYS = ["outcome", "route", "params", "allow", "candidates"]

  it("a route: the one the router picks, its parameters, the path's methods, and every other route matching", async () => {
    const routes = await seed()
    const response = await send(match({ method: "GET", path: "/users/me?fields=name" }))
    assert.strictEqual(response.status, 200, response.text)
    assert.strictEqual(response.headers.get("content-type"), "application/json")
    assert.deepStrictEqual(Object.keys(response.json), KEYS)
    assert.deepStrictEqual(response.json.route, routes["GET /users/me"])
    assert.deepStrictEqual(response.json.params, {})
    assert.deepStrictEqual(response.json.allow, ["GET", "HEAD", "POST"])
    const candidates = response.json.candidates
    assert.deepStrictEqual(candidates.map((c: any) => c.route), [routes["GET /users/:id"], routes["POST /users/:id"]])
    for (const candidate of candidates) assert.deepStrictEqual(Object.keys(candidate), ["route", "reason"])
    assert.include(candidates[0].reason, "segment 2")
    assert.include(candidates[1].reason, "another method")
  })

  it("with key=, a split's choice beside the route: key, bucket and handler (docs/router.md: disabled routes and splits)", async () => {
    const split = { by: "header:x-user", targets: [{ handler: "v2", weight: 5000 }] }
    const created = await send(post({ method: "GET", path: "/split", handler: "h", split }))
    assert.strictEqual(created.status, 201, created.text)
    for (const key of ["alice", "bob", "carol", "dave"]) {
      const response = await send(match({ method: "GET", path: "/split", key }))
      assert.deepStrictEqual(Object.keys(response.json), ["outcome", "route", "split", "params", "allow", "candidates"])
      const bucket = Split.bucketOf(created.json.id, key)
      assert.deepStrictEqual(response.json.split, { key, bucket, handler: bucket < 5000 ? "v2" : "h" })
    }
    const keyless = await send(match({ method: "GET", path: "/split" }))
    assert.deepStrictEqual(keyless.json.split, { key: null, bucket: null, handler: "h" })
    const plain = await send(match({ method: "GET", path: "/users/me", key: "alice" }))
    assert.deepStrictEqual(Object.keys(plain.json), KEYS)
  })

  it("reads the query from path, takes host and header, and names the condition a near miss fails (docs/router.md: conditions)", async () => {
    const when = { host: "*.example.com", headers: [{ name: "x-version", value: "2" }], query: [{ name: "beta" }] }
    const conditioned = await send(post({ method: "GET", path: "/c/:id", handler: "h", when }))
    assert.strictEqual(conditioned.status, 201, conditioned.text)
    const plain = await send(post({ method: "GET", path: "/c/:id", handler: "h" }))
    const question = (path: string, extra: string) => send(match(`method=GET&path=${encodeURIComponent(path)}${extra}`))
    const served = await question("/c/1?beta", "&host=api.example.com:443&header=X-Version:2&header=accept:*/*")
    assert.strictEqual(served.json.route.id, conditioned.json.id)
    assert.deepStrictEqual(served.json.route.when, when)
    const missed = await question("/c/1?beta", "&host=api.example.com&header=x-version:%201")
    assert.strictEqual(missed.json.route.id, plain.json.id)
    assert.deepStrictEqual(Object.keys(missed.json.candidates[0]), ["route", "reason", "condition"])
    assert.strictEqual(missed.json.candidates[0].condition, "when.headers[0]")
    const noQuery = await question("/c/1", "&host=api.example.com&header=x-version:2")
    assert.strictEqual(noQuery.json.candidates[0].condition, "when.query[0]")
    const bad = await question("/c/1", "&header=no-colon")
    assert.strictEqual(bad.status, 400)
    assert.strictEqual(bad.json.errors[0].path, "header[0]")
  })

  it("HEAD is served by GET, and parameters are percent-decoded as the router decodes them", async () => {
    const routes = await seed()
    const response = await send(match({ method: "HEAD", path: "/users/caf%C3%A9" }))
    assert.strictEqual(response.json.outcome, "route")
    assert.deepStrictEqual(response.json.route, routes["GET /users/:id"])
    assert.deepStrictEqual(response.json.params, { id: "café" })
  })

  it("method_not_allowed, not_found and bad_path, as the router answers them", async () => {
    await seed()
    const refused = await send(match({ method: "DELETE", path: "/users/42" }))
    assert.deepStrictEqual([refused.json.outcome, refused.json.route, refused.json.params, refused.json.allow], [
      "method_not_allowed",
      null,
      null,
      ["GET", "HEAD", "POST"]
    ])
    assert.strictEqual(refused.json.candidates.length, 2)
    assert.deepStrictEqual((await send(match({ method: "GET", path: "/users/" }))).json, {
      outcome: "not_found",
      route: null,
      params: null,
      allow: [],
      candidates: []
    })
    assert.strictEqual((await send(match({ method: "GET", path: "/users/%zz" }))).json.outcome, "bad_path")
  })

  it("reads the process's table: a change is in the answer as soon as it is acknowledged", async () => {
    const routes = await seed()
    assert.strictEqual((await send(remove(routes["GET /users/me"].id))).status, 204)
    const response = await send(match({ method: "GET", path: "/users/me" }))
    assert.deepStrictEqual(response.json.route, routes["GET /users/:id"])
    assert.deepStrictEqual(response.json.params, { id: "me" })
  })

  it("a missing or invalid method or path, another parameter, one given twice: 400 invalid_query naming each", async () => {
    for (
      const [query, expected] of [
        ["path=/a", ["method"]],
        ["method=GET", ["path"]],
        ["", ["method", "path"]],
        ["method=get&path=/a", ["method"]],
        ["method=GET&path=a", ["path"]],
        ["method=GET&path=", ["path"]],
        ["method=GET&path=/a&path=/b", ["path"]],
        ["method=GET&path=/a&limit=1", ["limit"]],
        ["method=GET&path=/a&access_token=admin-token", ["access_token"]]
      ] as const
    ) {
      const response = await send(match(query))
      assertProblem(response, "invalid_query", ["errors"])
      assert.sameMembers(paths(response), [...expected], query)
    }
  })

  it("routes:read; authentication and scope before the query; GET only", async () => {
    assert.strictEqual((await send(match({ method: "GET", path: "/" }, auth(READER)))).status, 200)
    assertProblem(await send(match("method=get", auth(WRITER))), "insufficient_scope")
    assertProblem(await send(match("method=get", {})), "unauthenticated")
    const response = await send({ ...match({ method: "GET", path: "/" }), method: "DELETE" })
    assertProblem(response, "method_not_allowed")
    assert.strictEqual(response.headers.get("allow"), "GET")
  })
}

const everyOperation: ReadonlyArray<Sent> = [
  post(sample),
  get(Route.makeRouteId(0)),
  list("limit=5"),
  patch(Route.makeRouteId(0), { handler: "x" }),
  remove(Route.makeRouteId(0))
]

/** Owners of path prefixes (docs/authentication.md): `routes:write:<prefix>` on create, update and delete; reads unlimited. */
export const ownersContract = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  const send = serving(adapter, store, options)
  const owner = { ...auth(OWNER), ...json }
  const route = (path: string, handler = "h") => ({ method: "GET", path, handler })
  const create = async (path: string, headers: Record<string, string> = { ...auth(ADMIN), ...json }) => {
    const response = await send(post(route(path), headers))
    assert.strictEqual(response.status, 201, response.text)
    return response.json as { id: string; path: string }
  }
  const assertOutside = (response: Received, scope: string) => {
    assertProblem(response, "insufficient_scope")
    assert.strictEqual(
      response.headers.get("www-authenticate"),
      `Bearer realm="routing", error="insufficient_scope", scope="${scope}"`
    )
  }
  const paths = async () =>
    ((await send(list("limit=100"))).json.items as Array<{ path: string }>).map((item) => item.path).sort()

  it("creates routes at its prefixes and below them; anywhere else is 403 naming the scope needed, and stores nothing", async () => {
    for (const path of ["/payments", "/payments/:id", "/payments/refunds/*rest", "/api/orders/:id.json"]) {
      await create(path, owner)
    }
    const refused: ReadonlyArray<readonly [string, string]> = [
      ["/paymentsx", "routes:write:/paymentsx"],
      ["/orders/:id", "routes:write:/orders"],
      ["/api/other/:id", "routes:write:/api/other"],
      ["/api", "routes:write:/api"],
      ["/:tenant/payments", "routes:write"],
      ["/", "routes:write"]
    ]
    for (const [path, scope] of refused) assertOutside(await send(post(route(path), owner)), scope)
    assert.deepStrictEqual(await paths(), [
      "/api/orders/:id.json",
      "/payments",
      "/payments/:id",
      "/payments/refunds/*rest"
    ])
  })

  it("reads every route, inside its prefixes or not", async () => {
    const other = await create("/orders/:id")
    assert.strictEqual((await send(get(other.id, auth(OWNER)))).status, 200)
    assert.strictEqual((await send(list("", auth(OWNER)))).status, 200)
  })

  it("updates within its prefixes; moving a route out, or touching one outside, is 403 and changes nothing", async () => {
    const mine = await create("/payments/:id")
    const moved = await send(patch(mine.id, { path: "/payments/v2/:id" }, owner))
    assert.strictEqual(moved.status, 200, moved.text)
    assertOutside(await send(patch(mine.id, { path: "/orders/:id" }, owner)), "routes:write:/orders")
    const theirs = await create("/orders/:id")
    assertOutside(await send(patch(theirs.id, { handler: "mine" }, owner)), "routes:write:/orders")
    // Moving a route into its prefixes from outside is refused too: the stored path decides.
    assertOutside(await send(patch(theirs.id, { path: "/payments/taken/:id" }, owner)), "routes:write:/orders")
    assert.strictEqual((await send(get(mine.id))).json.path, "/payments/v2/:id")
    assert.deepStrictEqual({ ...(await send(get(theirs.id))).json, createdAt: "" }, {
      ...theirs,
      createdAt: ""
    })
  })

  it("deletes within its prefixes; a route outside is 403 before If-Match, and stays", async () => {
    const mine = await create("/api/orders/:id")
    const theirs = await create("/orders/:id")
    assertOutside(await send(remove(theirs.id, auth(OWNER))), "routes:write:/orders")
    assertOutside(await send(remove(theirs.id, { ...auth(OWNER), "if-match": "\"999\"" })), "routes:write:/orders")
    assert.strictEqual((await send(get(theirs.id))).status, 200)
    assertProblem(await send(remove(mine.id, { ...auth(OWNER), "if-match": "\"999\"" })), "precondition_failed")
    assert.strictEqual((await send(remove(mine.id, auth(OWNER)))).status, 204)
    assertProblem(await send(remove(mine.id, auth(OWNER))), "route_not_found")
  })

  it("the stored path is checked with the write: a delete racing a move out of its prefix never deletes it there", async () => {
    for (let i = 0; i < 8; i++) {
      const mine = await create(`/payments/race${i}`)
      const [moved, deleted] = await Promise.all([
        send(patch(mine.id, { path: `/orders/race${i}` })),
        send(remove(mine.id, auth(OWNER)))
      ])
      // Either the delete came first (the move then finds nothing), or the move did (the delete is then refused).
      if (deleted.status === 204) {
        assertProblem(moved, "route_not_found")
      } else {
        assert.strictEqual(moved.status, 200, moved.text)
        // The narrowest scope for the path the route holds now: decided on the stored route, not the request.
        assertOutside(deleted, `routes:write:/orders/race${i}`)
        assert.strictEqual((await send(get(mine.id))).json.path, `/orders/race${i}`)
      }
    }
  })
}
