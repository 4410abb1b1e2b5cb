import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import * as Route from "route-registry/Route"
import { accepted, refused } from "./fixtures/samples.js"

describe("Route.validateCreate", () => {
  for (const sample of accepted) {
    it(`accepts: ${sample.name}`, () => {
      const result = Route.validateCreate(sample.body)
      assert.isTrue(Either.isRight(result), JSON.stringify(Either.isLeft(result) ? result.left : null))
      const input = Either.getOrThrow(result)
      assert.deepStrictEqual(
        { method: input.method, path: input.path, middleware: input.middleware, handler: input.handler },
        { middleware: [], ...sample.body }
      )
    })
  }

  for (const sample of refused) {
    it(`refuses: ${sample.name}`, () => {
      const result = Route.validateCreate(sample.body)
      assert.isTrue(Either.isLeft(result), "expected the body to be refused")
      const issues = Either.isLeft(result) ? result.left : []
      assert.deepStrictEqual(issues.map((issue) => issue.path), sample.errors.map(([path]) => path))
      sample.errors.forEach(([, fragment], i) => assert.include(issues[i]!.message, fragment))
    })
  }

  it("decodeCreate fails with InvalidRoute listing every problem", () => {
    const error = Effect.runSync(Effect.flip(Route.decodeCreate({ method: "get", path: "/a/", handler: "" })))
    assert.strictEqual(error._tag, "InvalidRoute")
    assert.deepStrictEqual(error.errors.map((e) => e.path), ["method", "path", "handler"])
    assert.include(error.message, "method: methods are case-sensitive")
  })
})

describe("Route.CreateRoute schema agrees with validateCreate", () => {
  const decode = Schema.decodeUnknownEither(Route.CreateRoute, { errors: "all", onExcessProperty: "error" })
  for (const sample of accepted) {
    it(`accepts: ${sample.name}`, () => assert.isTrue(Either.isRight(decode(sample.body))))
  }
  for (const sample of refused) {
    it(`refuses: ${sample.name}`, () => assert.isTrue(Either.isLeft(decode(sample.body))))
  }
  it("defaults middleware to []", () => {
    const input = Either.getOrThrow(decode({ method: "GET", path: "/", handler: "h" }))
    assert.deepStrictEqual(input.middleware, [])
  })
})

describe("Route.parsePath", () => {
  it("yields segments, parameter names and shape", () => {
    const parsed = Either.getOrThrow(Route.parsePath("/users/:id/posts/:postId"))
    assert.deepStrictEqual(parsed.segments, [
      { _tag: "Static", value: "users" },
      { _tag: "Param", name: "id" },
      { _tag: "Static", value: "posts" },
      { _tag: "Param", name: "postId" }
    ])
    assert.deepStrictEqual(parsed.params, ["id", "postId"])
    assert.strictEqual(parsed.shape, "/users/:/posts/:")
  })

  it("root has no segments and shape /", () => {
    assert.deepStrictEqual(Either.getOrThrow(Route.parsePath("/")), {
      path: "/" as Route.RoutePath,
      segments: [],
      params: [],
      shape: "/"
    })
  })

  it("reports each problem with its 0-based index", () => {
    const issues = Either.flip(Route.parsePath("/a//b/:/c?d"))
    assert.deepStrictEqual(Either.getOrThrow(issues).map((issue) => issue.index), [2, 6, 9])
  })

  it("keeps what it accepts byte for byte (no normalisation)", () => {
    for (const path of ["/%C3%A9", "/a/~b", "/A/a", "/x/:Id"]) {
      assert.strictEqual(Either.getOrThrow(Route.parsePath(path)).path, path)
    }
  })

  it("renamed parameters share a shape; a static segment does not", () => {
    const shape = (p: string) => Either.getOrThrow(Route.parsePath(p)).shape
    assert.strictEqual(shape("/users/:id"), shape("/users/:userId"))
    assert.notStrictEqual(shape("/users/me"), shape("/users/:id"))
    assert.strictEqual(Route.shapeOf("/a/:x/b/:y_2" as Route.RoutePath), "/a/:/b/:")
  })
})

describe("Route.RouteId", () => {
  it("accepts generated ids, stamped with the given time", () => {
    const id = Route.makeRouteId(Date.parse("2026-11-21T09:30:12.345Z"))
    assert.isTrue(Route.isRouteId(id))
    assert.strictEqual(parseInt(id.replace(/-/g, "").slice(0, 12), 16), Date.parse("2026-11-21T09:30:12.345Z"))
  })
  it("refuses uppercase, other versions and non-UUIDs", () => {
    const id = Route.makeRouteId(0)
    assert.isFalse(Route.isRouteId(id.toUpperCase()))
    assert.isFalse(Route.isRouteId("0b9f6a0e-1f2a-4c3b-8d4e-5f6a7b8c9d0e"))
    assert.isFalse(Route.isRouteId("not-a-uuid"))
    assert.isFalse(Route.isRouteId(42))
  })
})

describe("Route.Route", () => {
  const route = new Route.Route({
    id: Route.makeRouteId(Date.parse("2026-11-21T09:30:12.345Z")),
    method: "GET" as Route.HttpMethod,
    path: "/users/:id" as Route.RoutePath,
    middleware: ["auth" as Route.MiddlewareName],
    handler: "show" as Route.HandlerName,
    createdAt: new Date("2026-11-21T09:30:12.345Z")
  })

  it("encodes createdAt as Date.prototype.toISOString prints it", () => {
    const encoded = Schema.encodeSync(Route.Route)(route)
    assert.strictEqual(encoded.createdAt, "2026-11-21T09:30:12.345Z")
  })

  it("toJson is byte for byte JSON.stringify, for every accepted sample and odd dates", () => {
    for (const [i, sample] of accepted.entries()) {
      const input = Either.getOrThrow(Route.validateCreate(sample.body))
      for (
        const createdAt of [
          new Date(0),
          new Date(Date.UTC(2026, 10, 21, 9, 30, 12, 345 + i)),
          new Date(253402300799999)
        ]
      ) {
        const stored = new Route.Route({ id: Route.makeRouteId(createdAt.getTime()), ...input, createdAt })
        assert.strictEqual(Route.toJson(stored), JSON.stringify(stored))
      }
    }
  })

  it("serialises exactly the six fields, in order", () => {
    assert.deepStrictEqual(Object.keys(JSON.parse(JSON.stringify(route))), [
      "id",
      "method",
      "path",
      "middleware",
      "handler",
      "createdAt"
    ])
    assert.strictEqual(JSON.parse(JSON.stringify(route)).createdAt, "2026-11-21T09:30:12.345Z")
  })
})
