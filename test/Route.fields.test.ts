/**
 * The rules of descriptions, tags and middleware configs (docs/router.md): every problem at its path, the kept form of
 * a valid body, and catalog checking of configs against the host's schemas.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as Catalog from "route-registry/Catalog"
import * as Route from "route-registry/Route"

const base = { method: "GET", path: "/a", handler: "h" }

const issues = (body: unknown) => Either.match(Route.validateCreate(body), { onLeft: (l) => l, onRight: () => [] })

const paths = (body: unknown) => issues(body).map((issue) => issue.path)

describe("descriptions, tags and middleware configs: validation", () => {
  it("accepts them and keeps them in one form: { name } as the name, a config's keys canonical", () => {
    const created = Either.getOrThrow(Route.validateCreate({
      ...base,
      middleware: [{ name: "a" }, { name: "b", config: { z: 1, y: { d: 2, c: 1 }, "1": 0 } }],
      description: "Lists orders, 10 at a time",
      tags: ["team:orders", "v1.2/beta_x-y"]
    }))
    assert.deepStrictEqual(
      JSON.stringify(created.middleware),
      `["a",{"name":"b","config":{"1":0,"y":{"c":1,"d":2},"z":1}}]`
    )
    assert.deepStrictEqual(created.tags, ["team:orders", "v1.2/beta_x-y"])
    const plain = Either.getOrThrow(Route.validateCreate({ ...base, description: "", tags: [] }))
    assert.deepStrictEqual(Object.keys(plain), ["method", "path", "middleware", "handler"])
  })

  it("names every problem at its path, all at once", () => {
    assert.deepStrictEqual(
      paths({
        ...base,
        description: "one\ntwo",
        tags: ["Upper", "ok", "ok", 3, "-lead"],
        middleware: [
          { name: "a", config: [] },
          { name: "b", config: { s: "nul\u0000" } },
          { name: "c", extra: 1 },
          { config: {} },
          { name: "a" },
          { name: "d", config: { a: { b: { c: { d: { e: { f: { g: { h: {} } } } } } } } } }
        ]
      }),
      [
        "middleware[0].config",
        "middleware[1].config.s",
        "middleware[2].extra",
        "middleware[3].name",
        "middleware[4].name",
        "middleware[5].config.a.b.c.d.e.f.g.h",
        "description",
        "tags[0]",
        "tags[2]",
        "tags[3]",
        "tags[4]"
      ]
    )
  })

  it("a key that is not an identifier, the empty one included, has a path of its own: [\"\"], [\"a b\"]", () => {
    assert.deepStrictEqual(
      paths({
        ...base,
        middleware: [
          { name: "a", config: { "": { "a b": "nul\u0000", ok: ["nul\u0000"] } } },
          { name: "b", "": 1, "a b": 2 }
        ],
        when: { headers: [{ name: "x-v", "": 1 }], "": 2 },
        split: { by: "header:x", targets: [{ handler: "t", weight: 1, "": 3 }], "": 4 }
      }),
      [
        `middleware[0].config[""]["a b"]`,
        `middleware[0].config[""].ok[0]`,
        `middleware[1][""]`,
        `middleware[1]["a b"]`,
        `split[""]`,
        `split.targets[0][""]`,
        `when[""]`,
        `when.headers[0][""]`
      ]
    )
    const catalog = Catalog.namesOf({
      handlers: { h: 0 },
      middleware: { a: Catalog.configured(Schema.Struct({ "": Schema.Number }), 0) }
    })
    const found = Catalog.check(catalog, { handler: "h", middleware: [{ name: "a", config: { "": "x", "a b": 1 } }] })
    assert.sameMembers(found.map((issue) => issue.path), [`middleware[0].config[""]`, `middleware[0].config["a b"]`])
  })

  it("bounds: 1,024 characters of description, 16 tags, a config of 4 KiB and 8 levels", () => {
    assert.deepStrictEqual(paths({ ...base, description: "é".repeat(1024) }), [])
    assert.deepStrictEqual(paths({ ...base, description: "é".repeat(1025) }), ["description"])
    assert.deepStrictEqual(paths({ ...base, tags: Array.from({ length: 16 }, (_, i) => `t${i}`) }), [])
    assert.deepStrictEqual(paths({ ...base, tags: Array.from({ length: 17 }, (_, i) => `t${i}`) }), ["tags"])
    assert.deepStrictEqual(paths({ ...base, tags: ["a".repeat(64)] }), [])
    assert.deepStrictEqual(paths({ ...base, tags: ["a".repeat(65)] }), ["tags[0]"])
    const sized = (n: number) => ({ ...base, middleware: [{ name: "m", config: { v: "x".repeat(n - 8) } }] })
    assert.deepStrictEqual(paths(sized(4096)), [])
    assert.deepStrictEqual(paths(sized(4097)), ["middleware[0].config"])
    const deep = (levels: number): unknown => levels === 1 ? {} : { a: deep(levels - 1) }
    assert.deepStrictEqual(paths({ ...base, middleware: [{ name: "m", config: deep(8) }] }), [])
    assert.lengthOf(paths({ ...base, middleware: [{ name: "m", config: deep(9) }] }), 1)
    assert.deepStrictEqual(paths({ ...base, middleware: [{ name: "m", config: { a: [[[[[[[1]]]]]]] } }] }), [])
    assert.deepStrictEqual(paths({ ...base, middleware: [{ name: "m", config: { a: [[[[[[[[1]]]]]]]] } }] }), [
      "middleware[0].config.a[0][0][0][0][0][0][0]"
    ])
  })

  it("a patch clears them with \"\" and [], and refuses null saying so", () => {
    const patch = Either.getOrThrow(Route.validatePatch({ description: "", tags: [] }))
    assert.deepStrictEqual(patch, { description: "", tags: [] })
    const refused = Either.match(Route.validatePatch({ description: null, tags: null }), {
      onLeft: (l) => l,
      onRight: () => []
    })
    assert.deepStrictEqual(refused.map((issue) => issue.path), ["description", "tags"])
    assert.include(refused[0]!.message, `send "" to clear it`)
  })

  it("the Schemas agree: CreateRoute decodes a body with the fields, and refuses a bad tag", () => {
    const decode = Schema.decodeUnknownEither(Route.CreateRoute)
    assert.isTrue(Either.isRight(decode({ ...base, tags: ["a"], middleware: [{ name: "m", config: { x: 1 } }] })))
    assert.isTrue(Either.isLeft(decode({ ...base, tags: ["A"] })))
  })
})

describe("catalog checking of configs", () => {
  const names: Catalog.Names = Catalog.namesOf({
    handlers: { h: 0 },
    middleware: {
      plain: 0,
      limit: Catalog.configured(Schema.Struct({ max: Schema.Int.pipe(Schema.positive()), per: Schema.String }), 0)
    }
  })

  it("puts one problem per refusal at the config's full path", () => {
    const found = Catalog.check(names, {
      handler: "h",
      middleware: ["plain", { name: "limit", config: { max: -1, per: 3 } }]
    })
    assert.deepStrictEqual(found.map((issue) => issue.path), ["middleware[1].config.max", "middleware[1].config.per"])
  })

  it("refuses a config for a middleware without a schema, and a configured one whose schema refuses {}", () => {
    const found = Catalog.check(names, { middleware: [{ name: "plain", config: {} }, "limit"] })
    assert.deepStrictEqual(found.map((issue) => issue.path), [
      "middleware[0].config",
      "middleware[1].config.max",
      "middleware[1].config.per"
    ])
    assert.include(found[0]!.message, "takes no config")
  })

  it("accepts a config its schema decodes; an unknown name is named at .name", () => {
    assert.deepStrictEqual(Catalog.check(names, { middleware: [{ name: "limit", config: { max: 3, per: "1m" } }] }), [])
    const unknown = Catalog.check(names, { middleware: [{ name: "limt", config: {} }] })
    assert.deepStrictEqual(unknown.map((issue) => issue.path), ["middleware[0].name"])
    assert.include(unknown[0]!.message, `did you mean "limit"?`)
  })
})
