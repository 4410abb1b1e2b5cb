/**
 * The HTTP contract (CONTRACT §3): every row and rule, run through one adapter on one store. Each test starts a
 * fresh server over a fresh store.
 */
import { afterEach, assert, beforeEach, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, Redacted } from "effect"
import * as Authenticator from "route-registry/Authenticator"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Problem from "route-registry/Problem"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import { accepted, refused } from "../fixtures/samples.js"
import type { Adapter, Received, Sent, Served } from "./adapters.js"
import * as TestDatabase from "./TestDatabase.js"

export const ADMIN = "admin-token"
export const READER = "read-token"
export const WRITER = "write-token"

export const tokens = Authenticator.layerStaticTokens([
  { token: Redacted.make(ADMIN), scopes: ["routes:read", "routes:write"], id: "admin" },
  { token: Redacted.make(READER), scopes: ["routes:read"], id: "reader" },
  { token: Redacted.make(WRITER), scopes: ["routes:write"], id: "writer" }
])

export type Store = Layer.Layer<RouteRepository.RouteRepository, unknown>

const auth = (token: string) => ({ authorization: `Bearer ${token}` })
const json = { "content-type": "application/json" }

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

export const httpContract = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  let server: Served
  beforeEach(async () => {
    server = await adapter.start(Layer.merge(store, tokens), options)
  })
  afterEach(() => server.close())
  const send = (request: Sent) => server.send(request)
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

  describe("limits", () => {
    const limit = options?.maxBodyBytes ?? 64 * 1024
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

  describe("slow clients", () => {
    it("a body that stalls past the body timeout: 408 request_timeout, answered and the connection closed", async () => {
      const slow = await adapter.start(Layer.merge(store, tokens), { ...options, bodyTimeoutMillis: 300 })
      try {
        const response = await slow.send({ ...post(sample), body: stalledBody() })
        assertProblem(response, "request_timeout")
        assert.strictEqual(response.headers.get("connection"), "close")
        assert.strictEqual((await slow.send(post(sample))).status, 201) // the server goes on serving
      } finally {
        await slow.close()
      }
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
    for (const method of ["GET", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
      it(`${method} /v1/routing: 405 with Allow: POST`, async () => {
        const response = await send({ method, path: "/v1/routing", headers: auth(ADMIN) })
        assertProblem(response, "method_not_allowed")
        assert.strictEqual(response.headers.get("allow"), "POST")
      })
    }
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      it(`${method} /v1/routing/{id}: 405 with Allow: GET`, async () => {
        const response = await send({ method, path: `/v1/routing/${Route.makeRouteId(0)}`, headers: auth(ADMIN) })
        assertProblem(response, "method_not_allowed")
        assert.strictEqual(response.headers.get("allow"), "GET")
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
    it("content type before size", async () => {
      assertProblem(
        await send(post("x".repeat(limitOf(options) + 10), { ...auth(ADMIN), "content-type": "text/plain" })),
        "unsupported_media_type"
      )
    })
    it("size before JSON", async () => {
      assertProblem(await send(post("{".repeat(limitOf(options) + 10))), "payload_too_large")
    })
    it("JSON before the body rules", async () => {
      assertProblem(await send(post("{\"method\": \"get\",")), "malformed_json")
    })
    it("the body rules before the store", async () => {
      assert.strictEqual((await send(post(sample))).status, 201)
      assertProblem(await send(post({ ...sample, extra: 1 })), "invalid_route", ["errors"]) // not 409
    })
  })
}

const limitOf = (options?: RoutingHandler.Options) => options?.maxBodyBytes ?? 64 * 1024

/** A store that fails every call, for the 503 and 500 rows. */
export const failingStore = (failure: "unavailable" | "defect"): Store =>
  Layer.succeed(
    RouteRepository.RouteRepository,
    RouteRepository.RouteRepository.of({
      create: () =>
        failure === "unavailable"
          ? Effect.fail(new RouteRepository.StoreUnavailable({ reason: "test" }))
          : Effect.die(new Error("boom: INSERT INTO secret_table VALUES ('x')")),
      findById: () =>
        failure === "unavailable"
          ? Effect.fail(new RouteRepository.StoreUnavailable({ reason: "test" }))
          : Effect.die(new Error("boom: SELECT * FROM secret_table WHERE id = 'x'"))
    })
  )

/** A body that sends its first bytes and then nothing, never finishing. */
export const stalledBody = (): ReadableStream<Uint8Array> =>
  new ReadableStream({ start: (controller) => controller.enqueue(new TextEncoder().encode("{\"method\": ")) })

/** Drops log output, for tests that provoke errors on purpose. */
export const quiet = Logger.replace(Logger.defaultLogger, Logger.none)

/** The 503 and 500 rows, through one adapter. */
export const failureContract = (adapter: Adapter) => {
  it("the store is unavailable: 503 store_unavailable with Retry-After", async () => {
    const server = await adapter.start(Layer.merge(failingStore("unavailable"), tokens), { retryAfterSeconds: 3 })
    try {
      for (const request of [post(sample), get(Route.makeRouteId(0))]) {
        const response = await server.send(request)
        assertProblem(response, "store_unavailable")
        assert.strictEqual(response.headers.get("retry-after"), "3")
      }
    } finally {
      await server.close()
    }
  })

  it("the Postgres store cannot reach its database: 503 store_unavailable", async () => {
    const store = Layer.effect(RouteRepository.RouteRepository, PgRouteRepository.make()).pipe(
      Layer.provide(TestDatabase.unreachable)
    )
    const server = await adapter.start(Layer.merge(store, tokens))
    try {
      for (const request of [post(sample), get(Route.makeRouteId(0))]) {
        const response = await server.send(request)
        assertProblem(response, "store_unavailable")
        assert.strictEqual(response.headers.get("retry-after"), "1")
      }
    } finally {
      await server.close()
    }
  })

  it("anything unexpected: 500 internal_error without stack, SQL or token; the cause is logged", async () => {
    const logged: Array<string> = []
    const capture = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ cause, message }) => logged.push(`${message} ${cause}`))
    )
    const server = await adapter.start(Layer.mergeAll(failingStore("defect"), tokens, capture))
    try {
      for (const request of [post(sample), get(Route.makeRouteId(0))]) {
        const response = await server.send(request)
        assertProblem(response, "internal_error")
        for (const leak of ["boom", "secret_table", "SELECT", "INSERT", ADMIN, "at ", ".ts"]) {
          assert.notInclude(response.text, leak)
        }
      }
      assert.strictEqual(logged.length, 2)
      assert.include(logged[0], "secret_table")
    } finally {
      await server.close()
    }
  })
}
