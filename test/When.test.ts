/**
 * Conditions (docs/router.md: conditions): their validation and canonical form, how the table serves routes with
 * them (hosts, headers, query, precedence, the 405 rule, HEAD), what `explain` says of a near miss, and a differential
 * property test: random tables of routes with conditions answer random requests exactly as an independent reference
 * (every route tried, conditions tested and ranked on their own, paths by test/utils/referenceMatcher.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as Route from "route-registry/Route"
import * as RouteTable from "route-registry/RouteTable"
import * as When from "route-registry/When"
import * as Reference from "./utils/referenceMatcher.js"

let counter = 0
const route = (method: string, path: string, when?: unknown): Route.StoredRoute => {
  const input = Either.getOrThrow(
    Route.validateCreate({ method, path, handler: "h", ...(when === undefined ? {} : { when }) })
  )
  const id = `0190a000-0000-7000-8000-${(counter++).toString(16).padStart(12, "0")}` as Route.RouteId
  return new Route.StoredRoute({ ...input, id, createdAt: new Date(0), revision: 1 })
}

const issues = (when: unknown) =>
  Either.match(Route.validateCreate({ method: "GET", path: "/x", handler: "h", when }), {
    onLeft: (list) => list.map((issue) => `${issue.path}: ${issue.message}`),
    onRight: () => []
  })

const idOf = (resolution: RouteTable.Resolution<Route.StoredRoute>) =>
  resolution._tag === "Found" ? resolution.route.id : resolution._tag

describe("validation", () => {
  it("names each problem at its path", () => {
    const found = issues({
      host: "API.example.com",
      headers: [{ name: "x-a" }, { name: "bad name" }, { name: "X-A", value: 2 }],
      query: [{ name: "" }, { name: "q", extra: true }],
      other: 1
    })
    assert.deepStrictEqual(found.map((line) => line.split(":")[0]), [
      "when.other",
      "when.host",
      "when.headers[1].name",
      "when.headers[2].name",
      "when.headers[2].value",
      "when.query[0].name",
      "when.query[1].extra"
    ])
    assert.match(found[1]!, /use "api\.example\.com"/)
    assert.match(found[3]!, /already a condition at when\.headers\[0\]/)
  })

  it("refuses a port, a bad label, a wildcard in the middle, too many conditions, and a value too long", () => {
    assert.match(issues({ host: "api.example.com:8080" })[0]!, /port/)
    assert.match(issues({ host: "-api.example.com" })[0]!, /label/)
    assert.match(issues({ host: "api.*.example.com" })[0]!, /label/)
    assert.match(issues({ host: "a..b" })[0]!, /empty label/)
    const nine = Array.from({ length: 9 }, (_, i) => ({ name: `h${i}` }))
    assert.match(issues({ headers: nine })[0]!, /^when\.headers: must list at most 8/)
    assert.match(issues({ query: nine })[0]!, /^when\.query: must list at most 8/)
    assert.match(issues({ headers: [{ name: "a", value: "x".repeat(1025) }] })[0]!, /at most 1024/)
    assert.deepStrictEqual(issues({ host: "*.example.com", headers: [], query: [{ name: "a b", value: "" }] }), [])
  })

  it("keeps the canonical form: keys host, headers, query; header names lowercase; lists sorted; {} is none", () => {
    const r = route("GET", "/c", {
      query: [{ name: "b" }, { name: "a", value: "2" }],
      headers: [{ name: "X-B", value: "1" }, { name: "x-a" }],
      host: "api.example.com"
    })
    assert.strictEqual(
      Route.toJson(r).slice(Route.toJson(r).indexOf(`"when"`)),
      `"when":{"host":"api.example.com","headers":[{"name":"x-a"},{"name":"x-b","value":"1"}],` +
        `"query":[{"name":"a","value":"2"},{"name":"b"}]}}`
    )
    assert.isUndefined(route("GET", "/d", {}).when)
    assert.isUndefined(route("GET", "/e", { headers: [], query: [] }).when)
    const patch = Either.getOrThrow(Route.validatePatch({ when: {} }))
    assert.strictEqual(patch.when, null)
  })

  it("canonicalJson gives conditions written in any order and case their canonical JSON", () => {
    const written = { query: [{ name: "b" }, { name: "a", value: "2" }], headers: [{ name: "X-B", value: "1" }] }
    assert.strictEqual(
      When.canonicalJson(written),
      `{"headers":[{"name":"x-b","value":"1"}],"query":[{"name":"a","value":"2"},{"name":"b"}]}`
    )
    assert.strictEqual(When.canonicalJson({ headers: [] }), "")
    assert.strictEqual(When.canonicalJson(undefined), "")
  })
})

describe("serving", () => {
  const table = (...routes: ReadonlyArray<Route.StoredRoute>) => RouteTable.fromIterable(routes)

  it("matches the host without its port and case-insensitively; a wildcard takes one or more labels", () => {
    const exact = route("GET", "/h", { host: "api.example.com" })
    const wild = route("GET", "/h", { host: "*.example.com" })
    const none = route("GET", "/h")
    const t = table(none, wild, exact)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/h", { host: "API.Example.com:8443" })), exact.id)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/h", { host: "a.b.example.com" })), wild.id)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/h", { host: "example.com" })), none.id)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/h", { host: "badexample.com" })), none.id)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/h")), none.id)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/h", new Headers({ host: "x.example.com." }))), wild.id)
  })

  it("a route serves only when every condition holds; else a less specific path may", () => {
    const v2 = route("GET", "/users/:id", { headers: [{ name: "X-Version", value: "2" }], query: [{ name: "beta" }] })
    const rest = route("GET", "/users/*rest")
    const t = table(v2, rest)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/users/1?beta", { "x-version": "2" })), v2.id)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/users/1?beta=", { "x-version": "2" })), v2.id)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/users/1", { "x-version": "2" })), rest.id)
    assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/users/1?beta", { "x-version": "3" })), rest.id)
  })

  it("counts for 405 only the routes whose conditions hold, and serves HEAD by a GET whose conditions hold", () => {
    const post = route("POST", "/p", { host: "a.example.com" })
    const get = route("GET", "/p", { headers: [{ name: "x-a" }] })
    const t = table(post, get)
    assert.deepStrictEqual(RouteTable.lookup(t, "PUT", "/p", { host: "a.example.com" }), {
      _tag: "MethodNotAllowed",
      allow: ["POST"]
    })
    assert.deepStrictEqual(RouteTable.lookup(t, "PUT", "/p", { host: "b.example.com" }), { _tag: "NotFound" })
    assert.strictEqual(idOf(RouteTable.lookup(t, "HEAD", "/p", { "x-a": "" })), get.id)
    const withHead = table(post, get, route("HEAD", "/p", { query: [{ name: "h" }] }))
    assert.strictEqual(idOf(RouteTable.lookup(withHead, "HEAD", "/p", { "x-a": "1" })), get.id)
  })

  it("orders routes of one shape as docs/router.md says", () => {
    const ranked = [
      route("GET", "/o", { host: "a.example.com" }),
      route("GET", "/o", { host: "*.a.example.com" }),
      route("GET", "/o", { host: "*.example.com", headers: [{ name: "x" }, { name: "y" }] }),
      route("GET", "/o", { headers: [{ name: "x" }, { name: "y" }] }),
      route("GET", "/o", { headers: [{ name: "x", value: "1" }], query: [{ name: "q" }] }),
      route("GET", "/o", { headers: [{ name: "x" }], query: [{ name: "q", value: "1" }] }),
      route("GET", "/o", { headers: [{ name: "x" }], query: [{ name: "q" }] }),
      route("GET", "/o", { headers: [{ name: "a" }] }),
      route("GET", "/o", { headers: [{ name: "b" }] }),
      route("GET", "/o")
    ]
    const sorted = [...ranked].reverse().sort((a, b) => When.compare(a.when, b.when))
    assert.deepStrictEqual(sorted.map((r) => r.id), ranked.map((r) => r.id))
    // A request meeting every condition is served by each in turn as the ones above it are removed.
    const headers = { host: "b.a.example.com", x: "1", y: "1", a: "", b: "" }
    for (let i = 0; i < ranked.length; i++) {
      const t = table(...ranked.slice(i))
      // The first is for another host: the second serves in its place.
      assert.strictEqual(idOf(RouteTable.lookup(t, "GET", "/o?q=1", headers)), ranked[Math.max(i, 1)]!.id)
    }
  })

  it("explains a near miss by the condition that failed", () => {
    const v2 = route("GET", "/e/:id", { headers: [{ name: "x-version", value: "2" }] })
    const other = route("GET", "/e/*rest")
    const { candidates, resolution } = RouteTable.explain(table(v2, other), "GET", "/e/1", { "x-version": "1" })
    assert.strictEqual(idOf(resolution), other.id)
    assert.strictEqual(candidates[0]!.condition, "when.headers[0]")
    assert.match(candidates[0]!.reason, /x-version is "1", not "2"/)
  })
})

// ---------------------------------------------------------------------------------------------------------------
// The property: an independent reference
// ---------------------------------------------------------------------------------------------------------------

interface Cond {
  readonly name: string
  readonly value?: string
}
interface Conds {
  readonly host?: string
  readonly headers?: ReadonlyArray<Cond>
  readonly query?: ReadonlyArray<Cond>
}

// Written from docs/router.md, not from the library: the request's facts, each condition, the order of routes.
const refHost = (host: string | undefined) => host?.replace(/:\d+$/, "").toLowerCase()
const refMeets = (
  c: Conds | undefined,
  host: string | undefined,
  headers: Record<string, string>,
  query: URLSearchParams
) => {
  if (c === undefined) return true
  const h = refHost(host)
  if (c.host !== undefined) {
    if (h === undefined) return false
    if (c.host.startsWith("*.")) {
      const suffix = c.host.slice(1)
      if (!(h.endsWith(suffix) && h.length > suffix.length)) return false
    } else if (h !== c.host) return false
  }
  for (const { name, value } of c.headers ?? []) {
    const got = headers[name.toLowerCase()]
    if (got === undefined || (value !== undefined && got !== value)) return false
  }
  for (const { name, value } of c.query ?? []) {
    if (!query.has(name) || (value !== undefined && !query.getAll(name).includes(value))) return false
  }
  return true
}
const canonicalOf = (c: Conds | undefined): string => {
  if (c === undefined) return ""
  const sortList = (list: ReadonlyArray<Cond>, lower: boolean) =>
    list.map((x) => ({
      name: lower ? x.name.toLowerCase() : x.name,
      ...(x.value === undefined ? {} : { value: x.value })
    }))
      .sort((a, b) => (a.name + "\u0000" + (a.value ?? "")) < (b.name + "\u0000" + (b.value ?? "")) ? -1 : 1)
  const out: Record<string, unknown> = {}
  if (c.host !== undefined) out.host = c.host
  if ((c.headers ?? []).length > 0) out.headers = sortList(c.headers!, true)
  if ((c.query ?? []).length > 0) out.query = sortList(c.query!, false)
  return Object.keys(out).length === 0 ? "" : JSON.stringify(out)
}
const rank = (c: Conds | undefined): ReadonlyArray<number> => {
  const host = c?.host === undefined ? 0 : c.host.startsWith("*.") ? 1 + c.host.length : 10_000
  const valued = [...(c?.headers ?? []), ...(c?.query ?? [])].filter((x) => x.value !== undefined).length
  return [host, c?.headers?.length ?? 0, c?.query?.length ?? 0, valued]
}
const refCompare = (a: Conds | undefined, b: Conds | undefined): number => {
  const ra = rank(a)
  const rb = rank(b)
  for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return rb[i]! - ra[i]!
  const ka = canonicalOf(a)
  const kb = canonicalOf(b)
  return ka < kb ? -1 : ka > kb ? 1 : 0
}

interface Case {
  readonly routes: ReadonlyArray<{ readonly method: string; readonly path: string; readonly when: Conds | undefined }>
  readonly requests: ReadonlyArray<
    { method: string; target: string; host: string | undefined; headers: Record<string, string> }
  >
}

const reference = (routes: ReadonlyArray<Route.StoredRoute>, request: Case["requests"][number]) => {
  const query = new URLSearchParams(
    request.target.includes("?") ? request.target.slice(request.target.indexOf("?") + 1) : ""
  )
  const matches =
    (Reference.matching(routes.map((r, seq) => ({ id: r.id, method: r.method, path: r.path, seq })), request.target) ??
      [])
      .filter((m) => refMeets(routes[m.route.seq]!.when as Conds | undefined, request.host, request.headers, query))
  const best = (method: string) =>
    matches.filter((m) => m.route.method === method).sort((a, b) =>
      Reference.compareSpecificity(a.pattern, b.pattern) ||
      refCompare(routes[a.route.seq]!.when as Conds | undefined, routes[b.route.seq]!.when as Conds | undefined)
    )[0]
  const winner = request.method === "HEAD" ? best("HEAD") ?? best("GET") : best(request.method)
  if (winner !== undefined) return winner.route.id
  const allow = new Set(matches.map((m) => m.route.method))
  if (allow.has("GET")) allow.add("HEAD")
  return allow.size === 0 ? "NotFound" : [...allow].sort().join(",")
}

const NAMES = ["a", "b", "X-Ver"] as const
const VALUES = ["1", "2"] as const
const cond = fc.record({
  name: fc.constantFrom(...NAMES),
  value: fc.option(fc.constantFrom(...VALUES), { nil: undefined })
}, {
  requiredKeys: ["name"]
})
const uniqueConds = fc.uniqueArray(cond, { maxLength: 3, selector: (c) => c.name.toLowerCase() })
const conds: fc.Arbitrary<Conds | undefined> = fc.option(
  fc.record({
    host: fc.option(fc.constantFrom("a.example.com", "*.example.com", "*.a.example.com", "b.example.com"), {
      nil: undefined
    }),
    headers: uniqueConds,
    query: uniqueConds
  }).map((c) => {
    const out: { host?: string; headers?: ReadonlyArray<Cond>; query?: ReadonlyArray<Cond> } = {}
    if (c.host !== undefined) out.host = c.host
    if (c.headers.length > 0) {
      out.headers = c.headers.map((x) => x.value === undefined ? { name: x.name } : { name: x.name, value: x.value })
    }
    if (c.query.length > 0) {
      out.query = c.query.map((x) => x.value === undefined ? { name: x.name } : { name: x.name, value: x.value })
    }
    // At most 3 conditions, as the benchmark's; no host counts as none.
    return out
  }),
  { nil: undefined, freq: 3 }
)
const PATHS = ["/u/:id", "/u/me", "/u/*rest", "/v/:a/:b"] as const
const TARGETS = ["/u/1", "/u/me", "/u/1/p", "/v/1/2", "/w"] as const

const cases: fc.Arbitrary<Case> = fc.record({
  routes: fc.array(
    fc.record({ method: fc.constantFrom("GET", "GET", "POST", "HEAD"), path: fc.constantFrom(...PATHS), when: conds }),
    { minLength: 1, maxLength: 60 }
  ),
  requests: fc.array(
    fc.record({
      method: fc.constantFrom("GET", "POST", "HEAD", "PUT"),
      target: fc.tuple(
        fc.constantFrom(...TARGETS),
        fc.constantFrom(
          "",
          "?a",
          "?a=1",
          "?b=2&X-Ver=1",
          "?a=2&a=1&b",
          "?a&b&X-Ver",
          "?a=1&b=1&X-Ver=1",
          "?a=2&b=2&X-Ver=2"
        )
      )
        .map(([p, q]) => p + q),
      host: fc.option(
        fc.constantFrom("a.example.com", "A.Example.com:80", "x.a.example.com", "b.example.com", "example.com"),
        { nil: undefined }
      ),
      headers: fc.oneof(
        fc.dictionary(fc.constantFrom("a", "b", "x-ver"), fc.constantFrom(...VALUES), { maxKeys: 3 }),
        fc.constantFrom(...VALUES).map((v) => ({ a: v, b: v, "x-ver": v }))
      )
    }),
    { minLength: 1, maxLength: 20 }
  )
})

describe("property", () => {
  it("a table with conditions answers as the independent reference does", () => {
    fc.assert(
      fc.property(cases, ({ requests, routes: given }) => {
        // A route of one method, shape and conditions as another is left out: the stores never hold both.
        const seen = new Set<string>()
        const routes = given.flatMap(({ method, path, when }) => {
          const key = `${method} ${Reference.shapeOf(path)} ${canonicalOf(when)}`
          if (seen.has(key)) return []
          seen.add(key)
          return [route(method, path, when)]
        })
        const table = RouteTable.fromIterable(routes)
        for (const request of requests) {
          const headers: Record<string, string> = {
            ...request.headers,
            ...(request.host === undefined ? {} : { host: request.host })
          }
          const got = RouteTable.lookup(table, request.method, request.target, headers)
          const expected = reference(routes, request)
          const answer = got._tag === "Found"
            ? got.route.id
            : got._tag === "MethodNotAllowed"
            ? got.allow.join(",")
            : got._tag
          assert.strictEqual(answer, expected, JSON.stringify({ request, routes: routes.map((r) => Route.toJson(r)) }))
        }
      }),
      { numRuns: 400 }
    )
  })
})
