import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Equal, ParseResult, Schema } from "effect"
import { readFileSync } from "node:fs"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Uuid from "uuid"
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

  it("refuses the routing API's path and every path below it, at create and update, saying why", () => {
    for (const path of ["/v1/routing", "/v1/routing/x", "/v1/routing/:id", "/v1/routing/*rest"]) {
      for (
        const result of [
          Route.validateCreate({ ...{ method: "GET", handler: "h" }, path }),
          Route.validatePatch({ path })
        ]
      ) {
        const issues = Either.isLeft(result) ? result.left : []
        assert.deepStrictEqual(issues.map((issue) => issue.path), ["path"], path)
        assert.include(issues[0]!.message, JSON.stringify(path))
        assert.include(issues[0]!.message, "belong to the routing API in every host")
      }
    }
    for (const path of ["/v1/routings", "/v1/routing-x", "/v1/:x", "/v2/routing"]) {
      assert.isTrue(Either.isRight(Route.validateCreate({ method: "GET", path, handler: "h" })), path)
    }
  })

  it("decodeCreate fails with InvalidRoute listing every problem", () => {
    const error = Effect.runSync(Effect.flip(Route.decodeCreate({ method: "get", path: "/a/", handler: "" })))
    assert.strictEqual(error._tag, "InvalidRoute")
    assert.deepStrictEqual(error.errors.map((e) => e.path), ["method", "path", "handler"])
    assert.include(error.message, "method: methods are case-sensitive")
  })
})

// The fields a Schema decode failure names, in the form of a FieldIssue path ("middleware[1]", "" for the body).
const schemaPaths = (body: unknown, schema: Schema.Schema<any, any>): ReadonlyArray<string> | undefined => {
  const result = Schema.decodeUnknownEither(schema)(body) // the schema's own parse options, as a caller gets them
  if (Either.isRight(result)) return undefined
  return ParseResult.ArrayFormatter.formatErrorSync(result.left).map(({ path }) =>
    path.reduce<string>(
      (at, key) => typeof key === "number" ? `${at}[${key}]` : at === "" ? String(key) : `${at}.${String(key)}`,
      ""
    )
  )
}

// The fields named, without element indexes: the schema names a repeated middleware name at the list, the validator
// at the element.
const unique = (paths: ReadonlyArray<string>) => [...new Set(paths.map((path) => path.replace(/\[\d+\]$/, "")))].sort()

describe("Route.CreateRoute schema agrees with validateCreate", () => {
  for (const sample of accepted) {
    it(`accepts: ${sample.name}`, () => assert.isUndefined(schemaPaths(sample.body, Route.CreateRoute)))
  }
  for (const sample of refused) {
    it(`refuses, naming the same fields: ${sample.name}`, () => {
      const paths = schemaPaths(sample.body, Route.CreateRoute)
      assert.isDefined(paths, "the schema accepted a body validateCreate refuses")
      // A body that is not an object is one problem with the whole body in both.
      if (sample.errors.some(([path]) => path === "")) return
      assert.deepStrictEqual(unique(paths!), unique(sample.errors.map(([path]) => path)))
    })
  }
  it("refuses unknown fields, id and createdAt included, without options (they used to be dropped)", () => {
    for (
      const extra of [{ middlewares: [] }, { id: Route.makeRouteId(0) }, { createdAt: "2026-11-21T09:30:12.345Z" }]
    ) {
      const body = { method: "GET", path: "/", handler: "h", ...extra }
      assert.deepStrictEqual(schemaPaths(body, Route.CreateRoute), Object.keys(extra))
      assert.deepStrictEqual(
        Either.getOrThrow(Either.flip(Route.validateCreate(body))).map((issue) => issue.path),
        Object.keys(extra)
      )
    }
  })
  it("defaults middleware to []", () => {
    const input = Either.getOrThrow(
      Schema.decodeUnknownEither(Route.CreateRoute)({ method: "GET", path: "/", handler: "h" })
    )
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

  it("yields mixed segments and a wildcard, with their shapes and static lengths", () => {
    const parsed = Either.getOrThrow(Route.parsePath("/repos/v:major/compare/:base...:head/*rest"))
    assert.deepStrictEqual(parsed.segments, [
      { _tag: "Static", value: "repos" },
      {
        _tag: "Mixed",
        parts: [{ _tag: "Static", value: "v" }, { _tag: "Param", name: "major" }],
        shape: "v:",
        staticLength: 1
      },
      { _tag: "Static", value: "compare" },
      {
        _tag: "Mixed",
        parts: [{ _tag: "Param", name: "base" }, { _tag: "Static", value: "..." }, { _tag: "Param", name: "head" }],
        shape: ":...:",
        staticLength: 3
      },
      { _tag: "Wildcard", name: "rest" }
    ])
    assert.deepStrictEqual(parsed.params, ["major", "base", "head", "rest"])
    assert.strictEqual(parsed.shape, "/repos/v:/compare/:...:/*")
  })

  it("a name ends at the first character outside [A-Za-z0-9_]", () => {
    const parsed = Either.getOrThrow(Route.parsePath("/teams/:enterprise-team"))
    assert.deepStrictEqual(parsed.segments[1], {
      _tag: "Mixed",
      parts: [{ _tag: "Param", name: "enterprise" }, { _tag: "Static", value: "-team" }],
      shape: ":-team",
      staticLength: 5
    })
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

  it("shapes of mixed segments and wildcards: renamed ones share a shape, other forms do not", () => {
    const shape = (p: string) => Either.getOrThrow(Route.parsePath(p)).shape
    assert.strictEqual(shape("/files/:file.:ext"), "/files/:.:")
    assert.strictEqual(shape("/files/*rest"), "/files/*")
    assert.strictEqual(shape("/files/:name.:type"), shape("/files/:file.:ext"))
    assert.strictEqual(shape("/files/*path"), shape("/files/*rest"))
    const forms = ["/users/me", "/users/:id", "/users/:id.json", "/users/v:id", "/users/*rest", "/users/:a-:b"]
    assert.strictEqual(new Set(forms.map(shape)).size, forms.length)
    for (const path of forms) assert.strictEqual(Route.shapeOf(path as Route.RoutePath), shape(path))
  })
})

// Every problem of a path names the text at fault as well as its index (docs/http-api.md, "Route rules").
describe("Route.parsePath problems quote the text at fault and give its index", () => {
  const problems = (path: string) =>
    Either.match(Route.parsePath(path), { onLeft: (issues) => issues.map((issue) => issue.message), onRight: () => [] })

  it.each([
    ["/files/*rest/meta", "the wildcard at index 7", "\"*rest\""],
    ["/files/*9x", "wildcard name at index 8 starts with a digit", "\"*9x\""],
    ["/:1st", "parameter name at index 2 starts with a digit", "\":1st\""],
    ["/users/", "trailing slash at index 6", "\"/\""],
    ["/files/*", "at index 7", "\"*\""],
    ["/users/:", "empty parameter name at index 7", "\":\""],
    ["/a/*b*", "at index 5", "\"*b\""],
    ["/:a:b", "at index 3", "\":b\""]
  ])("%s: %s, quoting %s", (path, position, text) => {
    const [message] = problems(path)
    assert.include(message, position)
    assert.include(message, text)
  })

  it("quotes an over-long name whole, with where it starts", () => {
    const name = "n".repeat(65)
    assert.deepStrictEqual(problems(`/users/:${name}`), [
      `parameter name at index 8 is 65 characters long (":${name}"): at most 64 are allowed`
    ])
    assert.deepStrictEqual(problems(`/files/*${name}`), [
      `wildcard name at index 8 is 65 characters long ("*${name}"): at most 64 are allowed`
    ])
  })

  it("quotes the start of the 65th segment, and of the excess of a path too long", () => {
    const segments = `/${Array.from({ length: 66 }, (_, i) => `s${i}`).join("/")}`
    const at = segments.split("/").slice(0, 65).join("/").length + 1
    assert.include(problems(segments)[0], `the 65th starts at index ${at} ("s64/s65")`)
    const long = `/${"a".repeat(2_047)}bcdefghijklmnopqrstuvwxyz0123456789`
    assert.deepStrictEqual(problems(long), [
      `must be at most 2048 characters (got ${long.length}): the excess starts at index 2048 with ` +
      `"bcdefghijklmnopqrstuvwxyz0123456"…`
    ])
  })

  it("the table of docs/http-api.md shows what is answered", () => {
    const markdown = readFileSync(new URL("../docs/http-api.md", import.meta.url), "utf8")
    const rows = [...markdown.matchAll(/^\| `(\/[^`]*)` \| `([^`]*)`/gm)].filter(([, , problem]) =>
      problem!.includes("index")
    )
    assert.isAtLeast(rows.length, 15)
    for (const [, path, problem] of rows) assert.include(problems(path!), problem!, path)
  })
})

describe("Route.RouteId", () => {
  it("accepts generated ids, stamped with the given time", () => {
    const id = Route.makeRouteId(Date.parse("2026-11-21T09:30:12.345Z"))
    assert.isTrue(Route.isRouteId(id))
    assert.strictEqual(parseInt(id.replace(/-/g, "").slice(0, 12), 16), Date.parse("2026-11-21T09:30:12.345Z"))
  })
  it("ids made in the same millisecond sort in the order they were made", () => {
    const millis = Date.parse("2026-11-21T09:30:12.345Z")
    const ids = Array.from({ length: 1000 }, () => Route.makeRouteId(millis))
    assert.deepStrictEqual([...ids].sort(), ids)
    assert.strictEqual(new Set(ids).size, ids.length)
    assert.isTrue(ids.every(Route.isRouteId))
  })
  it("refuses uppercase, other versions and non-UUIDs", () => {
    const id = Route.makeRouteId(0)
    assert.isFalse(Route.isRouteId(id.toUpperCase()))
    assert.isFalse(Route.isRouteId("0b9f6a0e-1f2a-4c3b-8d4e-5f6a7b8c9d0e"))
    assert.isFalse(Route.isRouteId("not-a-uuid"))
    assert.isFalse(Route.isRouteId(42))
  })
  it("agrees with uuid's validate, version 7 and lowercase on every one-character change of an id", () => {
    const id = Route.makeRouteId(Date.parse("2026-11-21T09:30:12.345Z"))
    const oracle = (u: string) => Uuid.validate(u) && Uuid.version(u) === 7 && u === u.toLowerCase()
    const chars = "0123456789abcdefABCDEFgz-_ 7\u00e9"
    let accepted = 0
    for (let i = 0; i < id.length; i++) {
      for (const c of chars) {
        const changed = id.slice(0, i) + c + id.slice(i + 1)
        assert.strictEqual(Route.isRouteId(changed), oracle(changed), changed)
        if (oracle(changed)) accepted++
      }
    }
    for (
      const u of [id + "0", id.slice(1), "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"]
    ) {
      assert.strictEqual(Route.isRouteId(u), oracle(u), u)
    }
    assert.isAbove(accepted, 400)
  })
})

describe("a route the memory store creates", () => {
  it.effect("is the StoredRoute the class's constructor makes of its fields", () =>
    Effect.gen(function*() {
      const store = yield* RouteRepository.makeMemory
      const input = yield* Route.decodeCreate({ method: "GET", path: "/a/:id", middleware: ["auth"], handler: "h" })
      const created = yield* store.create(input)
      const made = new Route.StoredRoute({ ...created }, true)
      assert.instanceOf(created, Route.StoredRoute)
      assert.strictEqual(Object.getPrototypeOf(created), Object.getPrototypeOf(made))
      assert.deepStrictEqual(Object.keys(created), Object.keys(made))
      assert.isTrue(Equal.equals(created, made))
      assert.strictEqual(JSON.stringify(created), JSON.stringify(made))
      assert.strictEqual(String(created), String(made))
      const updated = yield* store.update(created.id, { handler: "g" as typeof created.handler })
      assert.deepStrictEqual(Object.keys(updated), Object.keys(made))
      assert.isTrue(
        Equal.equals(
          updated,
          new Route.StoredRoute({ ...created, handler: "g" as typeof created.handler, revision: 2 }, true)
        )
      )
    }))
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

describe("Route.validatePatch", () => {
  const issues = (body: unknown) => Either.getOrThrow(Either.flip(Route.validatePatch(body)))

  it("accepts any non-empty subset of the fields, keeping only those given", () => {
    const accepted = (body: object): object => Either.getOrThrow(Route.validatePatch(body))
    assert.deepStrictEqual(accepted({ handler: "h2" }), { handler: "h2" })
    assert.deepStrictEqual(accepted({ middleware: [] }), { middleware: [] })
    const all = { method: "PUT", path: "/a/:b", middleware: ["m"], handler: "h" }
    assert.deepStrictEqual(accepted(all), all)
  })

  it("refuses {} as nothing to change", () => {
    assert.deepStrictEqual(issues({}).map((issue) => issue.path), [""])
    assert.include(issues({})[0]!.message, "nothing to change")
  })

  it("refuses null for every field, saying how to keep or clear it", () => {
    const found = issues({ method: null, path: null, middleware: null, handler: null })
    assert.deepStrictEqual(found.map((issue) => issue.path), ["method", "path", "middleware", "handler"])
    assert.include(found[2]!.message, "[]")
  })

  it("refuses id, createdAt and unknown fields by name", () => {
    const found = issues({ handler: "h", id: "x", createdAt: "y", middlewares: [] })
    assert.deepStrictEqual(found.map((issue) => issue.path), ["id", "createdAt", "middlewares"])
    assert.include(found[0]!.message, "assigned by the service")
    assert.include(found[2]!.message, "did you mean \"middleware\"")
  })

  it("applies the create rules to each given field, all problems at once", () => {
    const found = issues({ method: "get", path: "/a//b/", middleware: ["ok", "ok", "1x"], handler: "" })
    assert.deepStrictEqual(found.map((issue) => issue.path), [
      "method",
      "path",
      "path",
      "middleware[1]",
      "middleware[2]",
      "handler"
    ])
  })

  it("refuses a body that is not an object", () => {
    for (const body of [null, [], "x", 1, true]) assert.deepStrictEqual(issues(body).map((issue) => issue.path), [""])
  })

  it("agrees with the PatchRoute schema on which fields are wrong", () => {
    const bodies: ReadonlyArray<unknown> = [
      {},
      { handler: "h" },
      { method: "get" },
      { middleware: ["a", "a"] },
      { middleware: null },
      { id: "x" },
      { handler: "h", extra: 1 },
      { path: "/a/:x/:x" }
    ]
    for (const body of bodies) {
      const expected = Either.match(Route.validatePatch(body), {
        onLeft: (found) => unique(found.map((issue) => issue.path)),
        onRight: () => undefined
      })
      const actual = schemaPaths(body, Route.PatchRoute)
      assert.deepStrictEqual(actual && unique(actual), expected)
    }
  })
})

describe("bounded problem lists", () => {
  it("a body with thousands of problems reports the first MAX_ISSUES", () => {
    const middleware = Array.from({ length: 17_905 }, (_, i) => `${i}bad`)
    for (const validate of [Route.validateCreate, Route.validatePatch]) {
      const found = Either.getOrThrow(Either.flip(validate({ method: "GET", path: "/", handler: "h", middleware })))
      assert.strictEqual(found.length, Route.MAX_ISSUES)
      assert.deepStrictEqual(found.slice(0, 2).map((issue) => issue.path), ["middleware", "middleware[0]"])
    }
  })

  it("a path with thousands of problems and thousands of unknown fields is bounded too", () => {
    const body: Record<string, unknown> = { method: "GET", path: "/" + "*/".repeat(1000) + "x", handler: "h" }
    for (let i = 0; i < 5000; i++) body[`field${i}`] = i
    assert.strictEqual(Either.getOrThrow(Either.flip(Route.validateCreate(body))).length, Route.MAX_ISSUES)
  })

  it("a body with exactly its problems under the bound lists them all", () => {
    const middleware = Array.from({ length: 10 }, (_, i) => `${i}bad`)
    const found = Either.getOrThrow(
      Either.flip(Route.validateCreate({ method: "GET", path: "/", handler: "h", middleware }))
    )
    assert.strictEqual(found.length, 10)
  })
})
