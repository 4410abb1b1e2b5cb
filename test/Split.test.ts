import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as Route from "route-registry/Route"
import * as Split from "route-registry/Split"
import * as Splits from "../src/internal/router/split.js"

// MurmurHash3_x86_32 as Austin Appleby's reference writes it, over bytes: what the library's hash of a string must equal
// for that string's UTF-8 bytes.
const reference = (bytes: Uint8Array, seed = 0): number => {
  let h = seed | 0
  const blocks = bytes.length & ~3
  const mix = (k: number) => {
    k = Math.imul(k, 0xcc9e2d51)
    k = (k << 15) | (k >>> 17)
    return Math.imul(k, 0x1b873593)
  }
  for (let i = 0; i < blocks; i += 4) {
    h ^= mix(bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24))
    h = (h << 13) | (h >>> 19)
    h = (Math.imul(h, 5) + 0xe6546b64) | 0
  }
  let k = 0
  for (let i = bytes.length - 1; i >= blocks; i--) k = (k << 8) | bytes[i]!
  if (bytes.length > blocks) h ^= mix(k)
  h ^= bytes.length
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

describe("Split.murmur3", () => {
  // Published vectors: SMHasher's verification values as collected at
  // https://stackoverflow.com/questions/14747343/murmurhash3-test-vectors (also Boost.Hash2's tests), and the
  // strings every MurmurHash3 port checks ("hello", the quick brown fox).
  const vectors: ReadonlyArray<readonly [string, number, number]> = [
    ["", 0, 0],
    ["", 1, 0x514e28b7],
    ["", 0xffffffff, 0x81f16f39],
    ["!Ce", 0, 0x7e4a8634],
    ["!C", 0, 0xa0f7b07a],
    ["!", 0, 0x72661cf4],
    ["\u0000\u0000\u0000\u0000", 0, 0x2362f9de],
    ["hello", 0, 0x248bfa47],
    ["hello, world", 0, 0x149bbb7f],
    ["The quick brown fox jumps over the lazy dog", 0, 0x2e4ff723],
    ["Hello, world!", 1234, 0xfaf6cdb3],
    // The same collection's vectors with seed 0x9747b28c: blocks and every tail length, a block-spanning length, and
    // a non-ASCII string (U+03C0 eight times: its UTF-8 bytes, two a character).
    ["a", 0x9747b28c, 0x7fa09ea6],
    ["aa", 0x9747b28c, 0x5d211726],
    ["aaa", 0x9747b28c, 0x283e0130],
    ["aaaa", 0x9747b28c, 0x5a97808a],
    ["abc", 0, 0xb3dd93fa],
    ["abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 0, 0xee925b90],
    ["Hello, world!", 0x9747b28c, 0x24884cba],
    ["\u03c0".repeat(8), 0x9747b28c, 0xd58063c1],
    ["a".repeat(256), 0x9747b28c, 0x37405bdc],
    ["The quick brown fox jumps over the lazy dog", 0x9747b28c, 0x2fa826cd]
  ]
  for (const [text, seed, expected] of vectors) {
    it(`${JSON.stringify(text)} with seed ${seed} gives ${expected.toString(16)}`, () => {
      assert.strictEqual(Split.murmur3(text, seed), expected)
    })
  }

  it("equals the reference over the UTF-8 bytes of any string, lone surrogates as TextEncoder encodes them", () => {
    const encoder = new TextEncoder()
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }), (binary, text) => {
        assert.strictEqual(Split.murmur3(binary), reference(encoder.encode(binary)))
        assert.strictEqual(Split.murmur3(text), reference(encoder.encode(text)))
      }),
      { numRuns: 2000 }
    )
    assert.strictEqual(Split.murmur3("\ud800x"), reference(encoder.encode("\ud800x")))
  })
})

describe("Split.choose", () => {
  const split = {
    by: "header:x-user-id",
    targets: [{ handler: "a", weight: 1000 }, { handler: "b", weight: 500 }]
  } as unknown as Split.Split
  const route = { id: "019a0000-0000-7000-8000-000000000000", handler: "main", split }

  it("computes the bucket over <group>:<key>, the group the route's id unless given", () => {
    const key = "user-42"
    const bucket = Split.murmur3(`${route.id}:${key}`) % 10_000
    assert.strictEqual(Split.choose(route, key).bucket, bucket)
    const grouped = { ...route, split: { ...split, group: "g" } }
    assert.strictEqual(Split.choose(grouped, key).bucket, Split.murmur3(`g:${key}`) % 10_000)
  })

  it("gives targets consecutive ranges from 0 in order, the route's handler the rest", () => {
    const byBucket = new Map<number, string>()
    for (let i = 0; i < 50_000 && byBucket.size < 10_000; i++) {
      const choice = Split.choose(route, `k${i}`)
      byBucket.set(choice.bucket!, choice.handler)
    }
    for (const [bucket, handler] of byBucket) {
      assert.strictEqual(handler, bucket < 1000 ? "a" : bucket < 1500 ? "b" : "main", `bucket ${bucket}`)
    }
  })

  it("sends a request without a key, or with an empty one, to the route's handler", () => {
    assert.deepStrictEqual(Split.choose(route, undefined), { handler: "main", key: null, bucket: null })
    assert.deepStrictEqual(Split.choose(route, ""), { handler: "main", key: null, bucket: null })
  })

  it("lets the override name any of the route's handlers, and ignores any other value", () => {
    assert.strictEqual(Split.choose(route, "k", "b").handler, "b")
    assert.strictEqual(Split.choose(route, undefined, "main").handler, "main")
    assert.strictEqual(Split.choose(route, undefined, "a").handler, "a")
    assert.strictEqual(Split.choose(route, "k", "other").handler, Split.choose(route, "k").handler)
  })

  it("keeps its weights within 0.5 percentage points over 100,000 keys", () => {
    const counts: Record<string, number> = { a: 0, b: 0, main: 0 }
    for (let i = 0; i < 100_000; i++) counts[Split.choose(route, `user-${i}`).handler]! += 1
    assert.closeTo(counts.a! / 1000, 10, 0.5)
    assert.closeTo(counts.b! / 1000, 5, 0.5)
    assert.closeTo(counts.main! / 1000, 85, 0.5)
  })
})

describe("validation of split and enabled", () => {
  const base = { method: "GET", path: "/c", handler: "checkout" }
  const problems = (body: Record<string, unknown>) =>
    Either.match(Route.validateCreate({ ...base, ...body }), { onLeft: (issues) => issues, onRight: () => [] })

  it("accepts a full split and keeps it in canonical order", () => {
    const created = Route.validateCreate({
      ...base,
      split: { override: "x-h", targets: [{ weight: 10, handler: "v2" }], group: "g", by: "query:user" }
    })
    assert.isTrue(Either.isRight(created))
    if (Either.isRight(created)) {
      assert.strictEqual(
        JSON.stringify(created.right.split),
        "{\"by\":\"query:user\",\"group\":\"g\",\"targets\":[{\"handler\":\"v2\",\"weight\":10}],\"override\":\"x-h\"}"
      )
    }
  })

  it("names each field at fault", () => {
    const paths = (body: Record<string, unknown>) => problems(body).map((issue) => issue.path)
    assert.deepStrictEqual(paths({ enabled: "no" }), ["enabled"])
    assert.deepStrictEqual(paths({ split: null }), ["split"])
    assert.deepStrictEqual(paths({ split: { by: "ip", targets: [] } }), ["split.by", "split.targets"])
    assert.deepStrictEqual(paths({ split: { by: "header:bad name", targets: [{ handler: "x", weight: 1 }] } }), [
      "split.by"
    ])
    assert.deepStrictEqual(
      paths({
        split: {
          by: "cookie:uid",
          targets: [
            { handler: "checkout", weight: 1 },
            { handler: "v2", weight: 1.5 },
            { handler: "v2", weight: 1 },
            { handler: "v3", weight: 1, extra: 1 }
          ],
          colour: "red"
        }
      }),
      [
        "split.colour",
        "split.targets[0].handler",
        "split.targets[1].weight",
        "split.targets[2].handler",
        "split.targets[3].extra"
      ]
    )
    assert.deepStrictEqual(
      paths({ split: { by: "cookie:uid", targets: [{ handler: "a", weight: 6000 }, { handler: "b", weight: 5000 }] } }),
      ["split.targets"]
    )
    assert.deepStrictEqual(
      paths({
        split: { by: "cookie:uid", targets: Array.from({ length: 9 }, (_, i) => ({ handler: `h${i}`, weight: 1 })) }
      }),
      ["split.targets"]
    )
    assert.deepStrictEqual(paths({ split: { by: "cookie:uid", targets: [{ handler: "a", weight: 1 }], group: "" } }), [
      "split.group"
    ])
    assert.deepStrictEqual(
      paths({ split: { by: "cookie:uid", targets: [{ handler: "a", weight: 1 }], override: "x y" } }),
      ["split.override"]
    )
    assert.include(problems({ split: { by: "ip", targets: [] } })[0]!.message, "header:")
  })

  it("accepts split: null in a patch (it removes the split), refuses enabled: null", () => {
    assert.deepStrictEqual(Route.validatePatch({ split: null }), Either.right({ split: null }))
    assert.isTrue(Either.isLeft(Route.validatePatch({ enabled: null })))
    assert.deepStrictEqual(Route.validatePatch({ enabled: true }), Either.right({ enabled: true }))
  })
})

describe("a split as the routers read it", () => {
  const ID = "019a0000-0000-7000-8000-000000000000"
  const split = {
    by: "header:x-user-id",
    targets: [{ handler: "a", weight: 5000 }],
    override: "x-handler"
  } as unknown as Split.Split
  const routeOf = (id: string, fields: Record<string, unknown> = {}) =>
    ({ id, handler: "main", ...fields }) as unknown as Route.Route
  const request = (headers: Record<string, string>, url = "/") => ({ headers, url })

  it("reads nothing of a request to a route without a split, and makes nothing for it", () => {
    // Structural: whatever the request or the reader, the path ends at the route's missing split. Any read of the
    // request, or any call of the reader (where a key, a string or a choice could be made), throws.
    const untouchable = new Proxy({}, {
      get: (_, name) => assert.fail(`the request's ${String(name)} was read`)
    })
    const reader: Splits.Reader<object> = {
      header: (_, name) => assert.fail(`the header ${name} was read`),
      target: () => assert.fail("the target was read")
    }
    for (let i = 0; i < 3; i++) assert.isUndefined(Splits.choiceOf(routeOf(ID), untouchable, reader))
  })

  it("hashes each route in its own group, and a new version of a route in its new group", () => {
    // One split object on two routes: each hashes in its own id (the prepared group is the route's, not the split's).
    const one = routeOf(ID, { split })
    const two = routeOf("019a0000-0000-7000-8000-000000000001", { split })
    const grouped = routeOf(ID, { split: { ...split, group: "checkout" } })
    for (let i = 0; i < 200; i++) {
      const key = `user-${i}`
      const headers = request({ "x-user-id": key })
      assert.deepStrictEqual(Splits.choiceOf(one, headers, Splits.incoming), Split.choose({ ...one, split }, key))
      assert.strictEqual(Splits.choiceOf(two, headers, Splits.incoming)!.bucket, Split.bucketOf(two.id, key))
      assert.strictEqual(Splits.choiceOf(grouped, headers, Splits.incoming)!.bucket, Split.bucketOf("checkout", key))
    }
  })

  it("reads a header's bytes as UTF-8 where valid, else as Latin-1", () => {
    const route = routeOf(ID, { split })
    const bucket = (value: string) => Splits.choiceOf(route, request({ "x-user-id": value }), Splits.incoming)!.bucket
    // Node gives each byte of a value as one character: "é" sent as UTF-8 arrives as "\u00c3\u00a9".
    assert.strictEqual(bucket("\u00c3\u00a9"), Split.bucketOf(ID, "\u00e9"))
    assert.strictEqual(Splits.headerText("\u00c3\u00a9t\u00c3\u00a9"), "\u00e9t\u00e9")
    assert.strictEqual(Splits.headerText("\u00e2\u0082\u00ac"), "\u20ac")
    // A byte that is not UTF-8 (0xE9 alone, "é" in Latin-1) is that Latin-1 character, hashed as its UTF-8 bytes.
    assert.strictEqual(bucket("\u00e9"), Split.bucketOf(ID, "\u00e9"))
    assert.strictEqual(Splits.headerText("caf\u00e9"), "caf\u00e9")
    assert.strictEqual(Split.bucketOf(ID, "\u00e9"), Split.murmur3(`${ID}:\u00e9`) % 10_000)
    // A value a server already decoded (a character above 0xFF) is taken as it is.
    assert.strictEqual(Splits.headerText("\u20ac"), "\u20ac")
  })

  it("finds a query parameter as URLSearchParams does, and a cookie as a split on ; and = does", () => {
    const chars = (alphabet: ReadonlyArray<string>) =>
      fc.array(fc.constantFrom(...alphabet), { maxLength: 24 }).map((xs) => xs.join(""))
    fc.assert(
      fc.property(chars(["u", "a", "=", "&", "%", "2", "0", "7", "5", "+", "#", "\u00e9", "?"]), (query) => {
        const sent = query.split("#")[0]!
        assert.strictEqual(Splits.queryValue(`/p?${query}`, "u"), new URLSearchParams(sent).get("u") ?? undefined)
      }),
      { numRuns: 3000 }
    )
    // A cookie: the first pair whose name, trimmed, is the name; its value trimmed.
    fc.assert(
      fc.property(chars(["u", "i", "d", "=", ";", " ", "x"]), (header) => {
        const expected = header.split(";").find((pair) =>
          pair.includes("=") && pair.slice(0, pair.indexOf("=")).trim() === "uid"
        )
        assert.strictEqual(
          Splits.cookieValue(header, "uid"),
          expected === undefined ? undefined : expected.slice(expected.indexOf("=") + 1).trim(),
          header
        )
      }),
      { numRuns: 3000 }
    )
  })

  it("reads a cookie as sent and a query parameter as URLSearchParams decodes it", () => {
    const byCookie = routeOf(ID, { split: { ...split, by: "cookie:uid" } })
    const byQuery = routeOf(ID, { split: { ...split, by: "query:u" } })
    const cookie = Splits.choiceOf(byCookie, request({ cookie: "a=1; uid=x%20y ; uid=second" }), Splits.incoming)
    assert.strictEqual(cookie!.key, "x%20y")
    const query = Splits.choiceOf(byQuery, request({}, "/p?v=1&u=x%20y+z&u=second#f"), Splits.incoming)
    assert.strictEqual(query!.key, "x y z")
    assert.deepStrictEqual(Splits.choiceOf(byQuery, request({}, "/p?u="), Splits.incoming), {
      handler: "main",
      key: null,
      bucket: null
    })
  })
})
