/**
 * The route table, rule by rule (docs/router.md, "Matching"): request paths and their normalisation, malformed paths, segment
 * matching, HEAD, the 405 method lists, precedence with backtracking, parameter decoding, the cost of a lookup, live
 * changes, and stored rows the table cannot hold; and the explanation of a lookup, which the property test of
 * test/RouteTable.property.test.ts checks against the reference matcher on random tables.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Layer, Logger } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as Adversarial from "../bench/adversarial.js"
import * as RouteTree from "../src/internal/table/routeTree.js"

let clock = Date.UTC(2026, 10, 23)

const route = (method: string, path: string): Route.Route =>
  new Route.Route({
    id: Route.makeRouteId(clock++),
    method: method as Route.HttpMethod,
    path: path as Route.RoutePath,
    middleware: [],
    handler: "h" as Route.HandlerName,
    createdAt: new Date(clock)
  })

// "METHOD /path" for each route.
const tableOf = (...specs: ReadonlyArray<string>) =>
  RouteTable.fromIterable(specs.map((spec) => {
    const [method, path] = spec.split(" ") as [string, string]
    return route(method, path)
  }))

// The same for paths of every form of the grammar (mixed segments, wildcards), each read by the production parser.
const looseTableOf = (...specs: ReadonlyArray<string>) => {
  const table = RouteTable.empty()
  for (const spec of specs) {
    const [method, path] = spec.split(" ") as [string, string]
    RouteTable.insert(table, route(method, path))
  }
  return table
}

// A resolution as text: "GET /users/:id {"id":"42"}", "405 GET, HEAD", "404", "400 <reason>".
const show = (resolution: RouteTable.Resolution): string => {
  switch (resolution._tag) {
    case "Found":
      return `${resolution.route.method} ${resolution.route.path} ${JSON.stringify(resolution.params)}`
    case "MethodNotAllowed":
      return `405 ${resolution.allow.join(", ")}`
    case "NotFound":
      return "404"
    case "BadPath":
      return `400 ${resolution.reason}`
  }
}

type Case = readonly [request: string, expected: string]

const check = (table: RouteTable.Table, cases: ReadonlyArray<Case>) => {
  for (const [request, expected] of cases) {
    const space = request.indexOf(" ")
    const resolution = RouteTable.lookup(table, request.slice(0, space), request.slice(space + 1))
    assert.strictEqual(show(resolution), expected, request)
  }
}

describe("RouteTable.lookup", () => {
  it("takes the path up to the first ?, from origin-form and absolute-form targets", () => {
    check(tableOf("GET /", "GET /users", "GET /users/:id"), [
      ["GET /users?x=1", "GET /users {}"],
      ["GET /users/42?x=/a/b?c", "GET /users/:id {\"id\":\"42\"}"],
      ["GET /?", "GET / {}"],
      ["GET /users#frag", "404"],
      ["GET http://example.com/users?x", "GET /users {}"],
      ["GET https://example.com:8443/users/7", "GET /users/:id {\"id\":\"7\"}"],
      ["GET http://example.com", "GET / {}"],
      ["GET http://example.com?x=1", "GET / {}"],
      ["OPTIONS *", "404"],
      ["CONNECT example.com:443", "404"],
      ["GET ", "404"]
    ])
  })

  it("normalises as RFC 3986 §6.2.2 says: uppercase hex, unreserved escapes decoded, nothing else", () => {
    const table = tableOf(
      "GET /A",
      "GET /a-b.c_d~e",
      "GET /a%2Cb",
      "GET /a,b",
      "GET /x/%25",
      "GET /caf%C3%A9",
      "GET /Users",
      "GET /u/:id"
    )
    check(table, [
      ["GET /%41", "GET /A {}"],
      ["GET /%61-b.c_d~e", "GET /a-b.c_d~e {}"],
      ["GET /%41-b.c_d~e", "404"],
      ["GET /%2D", "404"],
      ["GET /a%2db%2Ec%5fd%7Ee", "GET /a-b.c_d~e {}"],
      ["GET /a%2Cb", "GET /a%2Cb {}"],
      ["GET /a%2cb", "GET /a%2Cb {}"],
      ["GET /a,b", "GET /a,b {}"],
      ["GET /x/%25", "GET /x/%25 {}"],
      ["GET /x/%", "400 \"%\" at index 3 is not followed by two hex digits"],
      ["GET /caf%c3%a9", "GET /caf%C3%A9 {}"],
      ["GET /café", "404"],
      ["GET /users", "404"],
      ["GET /USERS", "404"],
      ["GET /u/%2E%2E", "GET /u/:id {\"id\":\"..\"}"],
      ["GET /u/..", "GET /u/:id {\"id\":\"..\"}"],
      ["GET /u/.", "GET /u/:id {\"id\":\".\"}"]
    ])
  })

  it("answers a bad path for a % not followed by two hex digits, whether or not a route could match", () => {
    check(tableOf("GET /files/:name", "GET /a"), [
      ["GET /files/%zz", "400 \"%\" at index 7 is not followed by two hex digits"],
      ["GET /files/%4", "400 \"%\" at index 7 is not followed by two hex digits"],
      ["GET /files/a%", "400 \"%\" at index 8 is not followed by two hex digits"],
      ["GET /nothing/here/%G0", "400 \"%\" at index 14 is not followed by two hex digits"],
      ["POST /a%", "400 \"%\" at index 2 is not followed by two hex digits"],
      ["GET /a?%zz", "GET /a {}"],
      ["GET http://h/%x", "400 \"%\" at index 1 is not followed by two hex digits"]
    ])
  })

  it("compares segments one by one, with equal counts: no trailing slash, no //, / only for /", () => {
    check(tableOf("GET /", "GET /users", "GET /users/:id", "GET /a/:x/:y"), [
      ["GET /", "GET / {}"],
      ["GET //", "404"],
      ["GET /users/", "404"],
      ["GET /users//", "404"],
      ["GET /users//42", "404"],
      ["GET //users", "404"],
      ["GET /users/42/", "404"],
      ["GET /users/42/x", "404"],
      ["GET /a/1/2", "GET /a/:x/:y {\"x\":\"1\",\"y\":\"2\"}"],
      ["GET /a/1", "404"],
      ["GET /a//2", "404"],
      ["GET /a/1/", "404"]
    ])
  })

  it("serves HEAD with a HEAD route for the path, else with the GET route", () => {
    const table = tableOf("GET /a", "HEAD /b", "GET /b", "GET /c/:id", "HEAD /c/:id/x", "HEAD /d/:id", "GET /d/me")
    check(table, [
      ["HEAD /a", "GET /a {}"],
      ["HEAD /b", "HEAD /b {}"],
      ["HEAD /c/1", "GET /c/:id {\"id\":\"1\"}"],
      ["HEAD /c/1/x", "HEAD /c/:id/x {\"id\":\"1\"}"],
      ["GET /c/1/x", "405 HEAD"],
      // A HEAD route for the path serves before the GET route, even a more specific one.
      ["HEAD /d/me", "HEAD /d/:id {\"id\":\"me\"}"],
      ["GET /d/me", "GET /d/me {}"],
      ["HEAD /nothing", "404"]
    ])
  })

  it("lists the methods that match the path, sorted in byte order, with HEAD wherever GET is", () => {
    const table = tableOf(
      "POST /r",
      "GET /r",
      "MKCOL /r",
      "M-SEARCH /r",
      "DELETE /r",
      "PUT /s/:id",
      "PATCH /s/me",
      "OPTIONS /t",
      "HEAD /t"
    )
    check(table, [
      ["PUT /r", "405 DELETE, GET, HEAD, M-SEARCH, MKCOL, POST"],
      ["get /r", "405 DELETE, GET, HEAD, M-SEARCH, MKCOL, POST"],
      ["M-SEARCH /r", "M-SEARCH /r {}"],
      ["GET /s/me", "405 PATCH, PUT"],
      ["GET /s/other", "405 PUT"],
      ["PATCH /s/other", "405 PUT"],
      ["PUT /s/me", "PUT /s/:id {\"id\":\"me\"}"],
      ["GET /t", "405 HEAD, OPTIONS"],
      ["DELETE /t/x", "404"],
      // The same answer twice: the list a node caches stays right.
      ["PUT /r", "405 DELETE, GET, HEAD, M-SEARCH, MKCOL, POST"]
    ])
  })

  it("serves the most specific route: at the first differing segment, static beats parameter", () => {
    const table = tableOf(
      "GET /users/me",
      "GET /users/:id",
      "GET /a/b/:y",
      "GET /a/:x/c",
      "GET /p/:x/q/:z",
      "GET /p/:x/:y/r",
      "GET /k/:x/l/m",
      "GET /k/l/:y/n",
      "POST /users/me"
    )
    check(table, [
      ["GET /users/me", "GET /users/me {}"],
      ["GET /users/you", "GET /users/:id {\"id\":\"you\"}"],
      ["GET /a/b/c", "GET /a/b/:y {\"y\":\"c\"}"],
      ["GET /a/z/c", "GET /a/:x/c {\"x\":\"z\"}"],
      ["GET /a/b/z", "GET /a/b/:y {\"y\":\"z\"}"],
      ["GET /p/1/q/r", "GET /p/:x/q/:z {\"x\":\"1\",\"z\":\"r\"}"],
      // Backtracking: the static branch (/k/l/…) fails at its last segment, the parameter branch matches.
      ["GET /k/l/l/m", "GET /k/:x/l/m {\"x\":\"l\"}"],
      ["GET /k/l/x/n", "GET /k/l/:y/n {\"y\":\"x\"}"],
      // Methods first: a less specific route of the method serves before a more specific one of another.
      ["DELETE /users/me", "405 GET, HEAD, POST"],
      ["POST /users/you", "405 GET, HEAD"]
    ])
  })

  it("splits a mixed segment lazily, left to right: each parameter the shortest text, the last the rest", () => {
    const table = looseTableOf(
      "GET /repos/:owner/:repo/compare/:base...:head",
      "GET /files/:file.:ext",
      "GET /v:major/status",
      "GET /range/:from-:to.json"
    )
    check(table, [
      [
        "GET /repos/o/r/compare/a...b...c",
        `GET /repos/:owner/:repo/compare/:base...:head {"owner":"o","repo":"r","base":"a","head":"b...c"}`
      ],
      ["GET /files/archive.tar.gz", `GET /files/:file.:ext {"file":"archive","ext":"tar.gz"}`],
      ["GET /files/.profile.bak", `GET /files/:file.:ext {"file":".profile","ext":"bak"}`],
      ["GET /files/archive.", "404"],
      ["GET /files/archive", "404"],
      ["GET /v2/status", `GET /v:major/status {"major":"2"}`],
      ["GET /v/status", "404"],
      ["GET /range/1-2-3.json", `GET /range/:from-:to.json {"from":"1","to":"2-3"}`],
      ["GET /range/1-.json", "404"],
      ["GET /files/caf%C3%A9.%74xt", `GET /files/:file.:ext {"file":"café","ext":"txt"}`],
      ["GET /files/a%FF.txt", "400 segment 2 is not UTF-8 once percent-decoded"]
    ])
  })

  it("ranks static over mixed over parameter over wildcard, and mixed by static characters then shape", () => {
    const table = looseTableOf(
      "GET /users/me",
      "GET /users/:id.json",
      "GET /users/:id",
      "GET /users/*rest",
      "GET /m/:a.:b",
      "GET /m/:a-:b",
      "GET /m/:a.json"
    )
    check(table, [
      ["GET /users/me", `GET /users/me {}`],
      ["GET /users/me.json", `GET /users/:id.json {"id":"me"}`],
      ["GET /users/42", `GET /users/:id {"id":"42"}`],
      ["GET /users/42/posts/7", `GET /users/*rest {"rest":"42/posts/7"}`],
      ["GET /m/x.json", `GET /m/:a.json {"a":"x"}`],
      // `:.:` and `:-:` have one static character each: `:-:` comes first in byte order.
      ["GET /m/x-y.z", `GET /m/:a-:b {"a":"x","b":"y.z"}`],
      ["GET /m/x.y-z", `GET /m/:a-:b {"a":"x.y","b":"z"}`],
      ["GET /m/x.y", `GET /m/:a.:b {"a":"x","b":"y"}`]
    ])
    const users = Array.from(table).filter((r) => r.path.startsWith("/users/"))
    RouteTable.remove(table, users.find((r) => r.path === "/users/me")!.id)
    check(table, [["GET /users/me", `GET /users/:id {"id":"me"}`]])
    RouteTable.remove(table, users.find((r) => r.path === "/users/:id")!.id)
    check(table, [["GET /users/me", `GET /users/*rest {"rest":"me"}`]])
  })

  it("backtracks past a segment that matched: /a/b/:y over /a/:x/c, and the next when one cannot go on", () => {
    const table = looseTableOf("GET /a/b/:y", "GET /a/:x/c", "GET /a/b/:y/d", "GET /a/:x.:z/*rest")
    check(table, [
      ["GET /a/b/c", `GET /a/b/:y {"y":"c"}`],
      ["GET /a/b/c/d", `GET /a/b/:y/d {"y":"c"}`],
      ["GET /a/x/c", `GET /a/:x/c {"x":"x"}`],
      // At the second segment a mixed segment beats a parameter.
      ["GET /a/b.c/c", `GET /a/:x.:z/*rest {"x":"b","z":"c","rest":"c"}`],
      ["GET /a/b.c/c/d", `GET /a/:x.:z/*rest {"x":"b","z":"c","rest":"c/d"}`],
      ["GET /a/b.c/e", `GET /a/:x.:z/*rest {"x":"b","z":"c","rest":"e"}`]
    ])
  })

  it("matches a wildcard to one or more non-empty segments, each decoded, joined with /", () => {
    const table = looseTableOf("GET /files/*rest", "POST /*all")
    check(table, [
      ["GET /files/a", `GET /files/*rest {"rest":"a"}`],
      ["GET /files/a/b/c?x=/y", `GET /files/*rest {"rest":"a/b/c"}`],
      ["GET /files/a%2Fb/c%20d", `GET /files/*rest {"rest":"a/b/c d"}`],
      ["GET /files", "405 POST"],
      ["GET /files/", "404"],
      ["GET /files/a//b", "404"],
      ["GET /files/a/b/", "404"],
      ["GET /", "404"],
      ["POST /x/y", `POST /*all {"all":"x/y"}`],
      ["GET /files/a/%FF", "400 segment 2 is not UTF-8 once percent-decoded"],
      ["HEAD /files/a", `GET /files/*rest {"rest":"a"}`]
    ])
  })

  it("falls back to the less specific route when the more specific one goes", () => {
    const specific = route("GET", "/a/b/:y")
    const table = RouteTable.fromIterable([specific, route("GET", "/a/:x/c")])
    check(table, [["GET /a/b/c", "GET /a/b/:y {\"y\":\"c\"}"]])
    RouteTable.remove(table, specific.id)
    check(table, [["GET /a/b/c", "GET /a/:x/c {\"x\":\"b\"}"], ["GET /a/b/d", "404"]])
  })

  it("decodes parameter values as UTF-8, %2F included, and refuses values that are not UTF-8", () => {
    const table = tableOf("GET /f/:name", "GET /g/:a/:b", "GET /bytes/%FF")
    check(table, [
      ["GET /f/a%2Fb", "GET /f/:name {\"name\":\"a/b\"}"],
      ["GET /f/a%2fb", "GET /f/:name {\"name\":\"a/b\"}"],
      ["GET /f/%E2%82%AC", "GET /f/:name {\"name\":\"€\"}"],
      ["GET /f/%F0%9F%98%80", "GET /f/:name {\"name\":\"😀\"}"],
      ["GET /f/a%20b", "GET /f/:name {\"name\":\"a b\"}"],
      ["GET /f/a+b", "GET /f/:name {\"name\":\"a+b\"}"],
      ["GET /f/%25", "GET /f/:name {\"name\":\"%\"}"],
      ["GET /f/%3F", "GET /f/:name {\"name\":\"?\"}"],
      ["GET /f/%FF", "400 segment 2 is not UTF-8 once percent-decoded"],
      ["GET /f/%C3", "400 segment 2 is not UTF-8 once percent-decoded"],
      ["GET /f/%C0%80", "400 segment 2 is not UTF-8 once percent-decoded"],
      ["GET /f/%ED%A0%80", "400 segment 2 is not UTF-8 once percent-decoded"],
      ["GET /g/ok/%E2%82", "400 segment 3 is not UTF-8 once percent-decoded"],
      // A static segment is compared as written, never decoded.
      ["GET /bytes/%ff", "GET /bytes/%FF {}"],
      // Values of a route of another method are not decoded.
      ["POST /f/%FF", "405 GET, HEAD"]
    ])
  })

  it("keeps a parameter named __proto__ as a value", () => {
    const resolution = RouteTable.lookup(tableOf("GET /p/:__proto__"), "GET", "/p/x")
    assert.strictEqual(resolution._tag, "Found")
    if (resolution._tag !== "Found") return
    assert.deepStrictEqual(Object.keys(resolution.params), ["__proto__"])
    assert.strictEqual(Object.getOwnPropertyDescriptor(resolution.params, "__proto__")?.value, "x")
    assert.strictEqual(Object.getPrototypeOf(resolution.params), Object.prototype)
  })

  it("compares methods exactly, open-ended ones included", () => {
    check(tableOf("M-SEARCH /ssdp", "PURGE /cache/:key", "QUERY /q"), [
      ["M-SEARCH /ssdp", "M-SEARCH /ssdp {}"],
      ["m-search /ssdp", "405 M-SEARCH"],
      ["PURGE /cache/k", "PURGE /cache/:key {\"key\":\"k\"}"],
      ["QUERY /q", "QUERY /q {}"],
      ["GET /q", "405 QUERY"]
    ])
  })
})

// The nodes a lookup examines, and what it resolves to.
const work = (table: RouteTable.Table, method: string, target: string) => {
  const before = RouteTree.examinedNodes(table.tree)
  const resolution = RouteTable.lookup(table, method, target)
  return { nodes: RouteTree.examinedNodes(table.tree) - before, tag: resolution._tag }
}

describe("RouteTable lookup cost (docs/router.md, Bounded lookups: a miss costs at most a few times a hit)", () => {
  const tables = [
    ["64 routes of 64 segments, a parameter at a different position each", Adversarial.oneParameter()],
    ["the same with three methods each", Adversarial.oneParameter(1, ["GET", "PUT", "DELETE"])],
    ["16 such families, 1,024 routes", Adversarial.oneParameter(16)],
    ["2,016 routes, two parameters at a different pair of positions each", Adversarial.twoParameters()],
    [
      "126 routes with a mixed segment or a parameter and a wildcard at a different position each",
      Adversarial.mixedAndWildcard()
    ]
  ] as const
  for (const [name, specs] of tables) {
    it(`on ${name}, every miss examines at most 5 times the nodes of a hit`, () => {
      const table = looseTableOf(...specs.map((spec) => `${spec.method} ${spec.path}`))
      const mixed = specs === tables[4][1]
      const { hit, ...misses } = mixed ? Adversarial.mixedRequests : Adversarial.requests
      const found = work(table, hit.method, hit.target)
      assert.strictEqual(found.tag, "Found")
      assert.isAtMost(found.nodes, Adversarial.SEGMENTS + 1, "a hit walks its own path")
      for (const [miss, { method, target }] of Object.entries(misses)) {
        const missed = work(table, method, target)
        assert.strictEqual(missed.tag, miss === "otherMethod" ? "MethodNotAllowed" : "NotFound", miss)
        assert.isAtMost(missed.nodes, 5 * found.nodes, `${miss}: ${missed.nodes} nodes against ${found.nodes}`)
      }
    })
  }

  it("a HEAD request served by the GET route walks the table once, not once per method", () => {
    const table = tableOf(...Adversarial.oneParameter(1, ["GET", "HEAD"]).map((spec) => `${spec.method} ${spec.path}`))
    const path = Adversarial.pathWith("a", [3]).replace(/:p3/, "x")
    RouteTable.remove(
      table,
      Array.from(table).find((route) => route.method === "HEAD" && route.path.includes(":p3/"))!.id
    )
    const head = work(table, "HEAD", path)
    assert.strictEqual(show(RouteTable.lookup(table, "HEAD", path)), `GET ${Adversarial.pathWith("a", [3])} {"p3":"x"}`)
    // Another method examines every node that matches the path: HEAD, looking for both, examines no more.
    assert.isAtMost(head.nodes, work(table, "POST", path).nodes)
  })

  it("keeps precedence and the 405 list on the tables built to force backtracking", () => {
    const table = tableOf(
      ...Adversarial.oneParameter(1, ["GET", "PUT"]).map((spec) => `${spec.method} ${spec.path}`),
      `DELETE ${Adversarial.pathWith("a", [10, 20])}`
    )
    const all = "/a".repeat(Adversarial.SEGMENTS)
    // Every route matches: the most specific has its parameter last.
    assert.strictEqual(show(RouteTable.lookup(table, "GET", all)), `GET ${Adversarial.pathWith("a", [63])} {"p63":"a"}`)
    assert.strictEqual(show(RouteTable.lookup(table, "POST", all)), "405 DELETE, GET, HEAD, PUT")
    const twice = all.replace(/^((?:\/a){10})\/a((?:\/a){9})\/a/, "$1/x$2/y")
    assert.strictEqual(show(RouteTable.lookup(table, "POST", twice)), "405 DELETE")
    assert.strictEqual(show(RouteTable.lookup(table, "POST", all + "/a")), "404")
  })
})

describe("RouteTable changes", () => {
  it("serves an inserted route at once and stops serving a removed one", () => {
    const table = RouteTable.empty()
    check(table, [["GET /users/1", "404"]])
    const byId = route("GET", "/users/:id")
    RouteTable.insert(table, byId)
    check(table, [["GET /users/1", "GET /users/:id {\"id\":\"1\"}"]])
    const me = route("GET", "/users/me")
    table.pipe(RouteTable.insert(me))
    check(table, [["GET /users/me", "GET /users/me {}"], ["GET /users/1", "GET /users/:id {\"id\":\"1\"}"]])
    RouteTable.remove(table, me.id)
    check(table, [["GET /users/me", "GET /users/:id {\"id\":\"me\"}"]])
    RouteTable.remove(table, byId.id)
    check(table, [["GET /users/1", "404"], ["GET /users/me", "404"]])
    assert.strictEqual(RouteTable.size(table), 0)
    assert.strictEqual(table.tree.root.statics, undefined, "the empty table keeps no nodes")
  })

  it("replaces the route with the same id on insert (an update), method and path included", () => {
    const original = route("GET", "/a/:id")
    const table = RouteTable.fromIterable([original, route("POST", "/b")])
    const updated = new Route.Route({ ...original, method: "PUT" as Route.HttpMethod, path: "/b" as Route.RoutePath })
    RouteTable.insert(table, updated)
    check(table, [["GET /a/1", "404"], ["PUT /b", "PUT /b {}"], ["GET /b", "405 POST, PUT"]])
    assert.strictEqual(RouteTable.size(table), 2)
    assert.strictEqual(RouteTable.get(table, original.id), updated)
    const handlerOnly = new Route.Route({ ...updated, handler: "other" as Route.HandlerName })
    RouteTable.insert(table, handlerOnly)
    const resolution = RouteTable.lookup(table, "PUT", "/b")
    assert.strictEqual(resolution._tag === "Found" ? resolution.route : undefined, handlerOnly)
  })

  it("updates the 405 list when routes come and go", () => {
    const post = route("POST", "/r")
    const table = RouteTable.fromIterable([route("GET", "/r"), post])
    check(table, [["PUT /r", "405 GET, HEAD, POST"]])
    RouteTable.remove(table, post.id)
    check(table, [["PUT /r", "405 GET, HEAD"]])
    RouteTable.insert(table, route("DELETE", "/r"))
    check(table, [["PUT /r", "405 DELETE, GET, HEAD"]])
  })

  it("removing an id it does not hold changes nothing", () => {
    const table = tableOf("GET /a")
    RouteTable.remove(table, "0193a000-0000-7000-8000-000000000000")
    check(table, [["GET /a", "GET /a {}"]])
    assert.strictEqual(RouteTable.size(table), 1)
  })

  it("with two routes of one method and shape (which stores refuse), the last inserted serves until removed", () => {
    const first = route("GET", "/u/:id")
    const second = route("GET", "/u/:name")
    const third = route("GET", "/u/:key")
    const table = RouteTable.fromIterable([first, second, third])
    check(table, [["GET /u/1", "GET /u/:key {\"key\":\"1\"}"]])
    RouteTable.remove(table, second.id)
    check(table, [["GET /u/1", "GET /u/:key {\"key\":\"1\"}"]])
    RouteTable.remove(table, third.id)
    check(table, [["GET /u/1", "GET /u/:id {\"id\":\"1\"}"]])
    RouteTable.remove(table, first.id)
    check(table, [["GET /u/1", "404"]])
    assert.strictEqual(RouteTable.size(table), 0)
  })

  it("refuses a route whose path is not a pattern, and stays unchanged", () => {
    const table = tableOf("GET /a")
    const bad = { ...route("GET", "/b"), path: "/b/" } as unknown as Route.Route
    assert.throws(() => RouteTable.insert(table, bad), /invalid path/)
    assert.strictEqual(RouteTable.size(table), 1)
    check(table, [["GET /a", "GET /a {}"], ["GET /b", "404"]])
  })

  it("iterates over its routes and prints them", () => {
    const routes = [route("GET", "/a"), route("POST", "/b/:id")]
    const table = RouteTable.fromIterable(routes)
    assert.deepStrictEqual(new Set(table), new Set(routes))
    assert.isTrue(RouteTable.isTable(table))
    assert.isFalse(RouteTable.isTable({}))
    assert.include(String(table), "POST /b/:id")
  })
})

describe("RouteTable.layer reloading", () => {
  it.live("a reload keeps the routes this process created while it ran, and drops those the store lost", () =>
    Effect.gen(function*() {
      const memory = yield* RouteRepository.makeMemory
      const listing = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      let lost = false // the feed's history is gone: the next read tells the table to reload
      let reloading = false
      const store: RouteRepository.RouteRepository["Type"] = {
        ...memory,
        // The reload's listing reads the store, then waits until the test has created a route meanwhile.
        list: (query) =>
          reloading
            ? Effect.tap(
              memory.list(query),
              () => Effect.zipRight(Deferred.succeed(listing, undefined), Deferred.await(release))
            )
            : memory.list(query)
      }
      const feed: RouteRepository.ChangeFeed = {
        cursor: Effect.succeed("cursor"),
        since: () =>
          Effect.sync((): RouteRepository.Changes => {
            if (!lost) return { cursor: "cursor", upserted: [], removed: [], complete: true }
            lost = false
            reloading = true
            return { cursor: "cursor", upserted: [], removed: [], complete: false }
          }),
        pollInterval: Duration.millis(10)
      }
      const input = (path: string) => Effect.orDie(Route.decodeCreate({ method: "GET", path, handler: "h" }))
      const context = yield* Layer.build(
        RouteTable.layer.pipe(
          Layer.provide(
            Layer.merge(
              Layer.succeed(RouteRepository.RouteRepository, store),
              Layer.succeed(RouteRepository.Feed, feed)
            )
          )
        )
      )
      const live = Context.get(context, RouteRepository.RouteRepository)
      const table = Context.get(context, RouteTable.RouteTable)
      const gone = yield* Effect.flatMap(input("/gone"), live.create)
      yield* memory.remove(gone.id) // behind the table's back: only a reload can tell
      lost = true
      yield* Deferred.await(listing)
      reloading = false
      const during = yield* Effect.flatMap(input("/during"), live.create)
      yield* Deferred.succeed(release, undefined)
      while (RouteTable.get(table, gone.id) !== undefined) yield* Effect.sleep(5)
      assert.strictEqual(RouteTable.get(table, during.id)?.id, during.id)
    }).pipe(Effect.scoped))
})

describe("RouteTable.layer and stored rows the table cannot hold", () => {
  // A row written before the 64-segment limit (docs/http-api.md, "Route rules"), as a store reads it back: trusted, not validated.
  const legacy = (id: string, revision: number) =>
    new Route.StoredRoute({
      id: id as Route.RouteId,
      method: "GET" as Route.HttpMethod,
      path: "/s".repeat(65) as Route.RoutePath,
      middleware: [],
      handler: "h" as Route.HandlerName,
      createdAt: new Date(clock),
      revision
    }, true)

  const capture = (lines: Array<string>) =>
    Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => lines.push(String(message))))

  const createIn = (store: RouteRepository.RouteRepository["Type"], path: string) =>
    Effect.flatMap(Effect.orDie(Route.decodeCreate({ method: "GET", path, handler: "h" })), store.create)

  // The live table and store of one process over `store`.
  const liveOver = (store: RouteRepository.RouteRepository["Type"]) =>
    Layer.build(RouteTable.layer.pipe(Layer.provide(Layer.succeed(RouteRepository.RouteRepository, store))))

  it.effect("loads every other route, and logs the row it skipped", () =>
    Effect.gen(function*() {
      const memory = yield* RouteRepository.makeMemory
      const kept = yield* createIn(memory, "/kept")
      const skipped = legacy(Route.makeRouteId(clock++), 1)
      const store: RouteRepository.RouteRepository["Type"] = {
        ...memory,
        list: (query) => Effect.map(memory.list(query), (page) => ({ ...page, items: [skipped, ...page.items] }))
      }
      const lines: Array<string> = []
      const context = yield* liveOver(store).pipe(Effect.provide(capture(lines)))
      const table = Context.get(context, RouteTable.RouteTable)
      assert.deepStrictEqual(Array.from(table, (route) => route.id), [kept.id])
      assert.strictEqual(show(RouteTable.lookup(table, "GET", "/kept")), "GET /kept {}")
      assert.strictEqual(lines.length, 1)
      assert.include(lines[0]!, skipped.id)
      assert.include(lines[0]!, "has 65 segments, more than the 64 allowed")
    }).pipe(Effect.scoped))

  it.effect("answers a change that committed although the table cannot hold its route, which leaves the table", () =>
    Effect.gen(function*() {
      const memory = yield* RouteRepository.makeMemory
      const created = yield* createIn(memory, "/old")
      // A store whose stored path predates the limit: an update of the handler alone gives it back.
      const store: RouteRepository.RouteRepository["Type"] = {
        ...memory,
        update: (id, patch, precondition) =>
          Effect.map(memory.update(id, patch, precondition), (route) => legacy(route.id, route.revision))
      }
      const lines: Array<string> = []
      const context = yield* liveOver(store)
      const table = Context.get(context, RouteTable.RouteTable)
      assert.isDefined(RouteTable.get(table, created.id))
      const updated = yield* Context.get(context, RouteRepository.RouteRepository)
        .update(created.id, { handler: "other" as Route.HandlerName })
        .pipe(Effect.provide(capture(lines)))
      assert.strictEqual(updated.id, created.id)
      assert.isUndefined(RouteTable.get(table, created.id), "the older version does not serve on")
      assert.strictEqual(show(RouteTable.lookup(table, "GET", "/old")), "404")
      assert.strictEqual(lines.length, 1)
      assert.include(lines[0]!, created.id)
    }).pipe(Effect.scoped))
})

// "METHOD /path: reason" for each candidate, in the order given.
const reasons = (explanation: RouteTable.Explanation) =>
  explanation.candidates.map(({ reason, route }) => `${route.method} ${route.path}: ${reason}`)

// The route that serves, when one does.
const servedBy = (explanation: RouteTable.Explanation) =>
  explanation.resolution._tag === "Found" ? explanation.resolution.route : undefined

describe("RouteTable.explain (the answer of GET /v1/routing/match)", () => {
  const users = tableOf("GET /users/:id", "GET /users/me", "GET /users/:id.json", "GET /users/*rest", "POST /users/:id")

  it("the most specific route serves; the others lose at the segment where they differ, by the rule that decides", () => {
    const explanation = RouteTable.explain(users, "GET", "/users/me?x=1")
    assert.strictEqual(explanation.resolution._tag, "Found")
    assert.deepStrictEqual(RouteTable.lookup(users, "GET", "/users/me?x=1"), explanation.resolution)
    assert.deepStrictEqual(explanation.allow, ["GET", "HEAD", "POST"])
    assert.deepStrictEqual(reasons(explanation), [
      "GET /users/:id: GET /users/me serves: at segment 2, its static segment \"me\" beats this route's parameter " +
      "\":id\" (static beats mixed beats parameter beats wildcard)",
      "POST /users/:id: another method: POST, not GET",
      "GET /users/*rest: GET /users/me serves: at segment 2, its static segment \"me\" beats this route's wildcard " +
      "\"*rest\" (static beats mixed beats parameter beats wildcard)"
    ])
  })

  it("a mixed segment beats a parameter; between mixed segments, more static characters, then the shape's order", () => {
    const table = tableOf("GET /f/:name.json", "GET /f/:a-:b", "GET /f/:a.:b", "GET /f/:id")
    assert.deepStrictEqual(reasons(RouteTable.explain(table, "GET", "/f/a-b.json")), [
      "GET /f/:a-:b: GET /f/:name.json serves: at segment 2, its mixed segment \":name.json\" has more static " +
      "characters (5) than this route's \":a-:b\" (1)",
      "GET /f/:a.:b: GET /f/:name.json serves: at segment 2, its mixed segment \":name.json\" has more static " +
      "characters (5) than this route's \":a.:b\" (1)",
      "GET /f/:id: GET /f/:name.json serves: at segment 2, its mixed segment \":name.json\" beats this route's " +
      "parameter \":id\" (static beats mixed beats parameter beats wildcard)"
    ])
    assert.deepStrictEqual(reasons(RouteTable.explain(table, "GET", "/f/a-b.c")), [
      "GET /f/:a.:b: GET /f/:a-:b serves: at segment 2, its mixed segment \":a-:b\" has as many static characters (1) " +
      "as this route's \":a.:b\", and its shape \":-:\" comes before \":.:\" in byte order",
      "GET /f/:id: GET /f/:a-:b serves: at segment 2, its mixed segment \":a-:b\" beats this route's parameter " +
      "\":id\" (static beats mixed beats parameter beats wildcard)"
    ])
  })

  it("backtracking: the route that wins may part from the others at a later segment", () => {
    const table = tableOf("GET /a/:x/c", "GET /a/b/:y")
    const explanation = RouteTable.explain(table, "GET", "/a/b/c")
    assert.strictEqual(servedBy(explanation)?.path, "/a/b/:y")
    assert.deepStrictEqual(reasons(explanation), [
      "GET /a/:x/c: GET /a/b/:y serves: at segment 2, its static segment \"b\" beats this route's parameter \":x\" " +
      "(static beats mixed beats parameter beats wildcard)"
    ])
  })

  it("HEAD is served by GET when no HEAD route matches; a HEAD route that matches takes it from every GET route", () => {
    const byGet = RouteTable.explain(tableOf("GET /a/:x", "POST /a/b"), "HEAD", "/a/b")
    assert.strictEqual(servedBy(byGet)?.method, "GET")
    assert.deepStrictEqual(reasons(byGet), [
      "POST /a/b: another method: POST, where a HEAD request is served by a HEAD route, else by a GET route"
    ])
    const byHead = RouteTable.explain(tableOf("GET /a/b", "HEAD /a/:x"), "HEAD", "/a/b")
    assert.strictEqual(servedBy(byHead)?.method, "HEAD")
    assert.deepStrictEqual(reasons(byHead), [
      "GET /a/b: a GET route serves a HEAD request only when no HEAD route matches the path, and HEAD /a/:x does"
    ])
  })

  it("405: every candidate is of another method, and allow is the router's Allow", () => {
    const explanation = RouteTable.explain(users, "DELETE", "/users/42")
    assert.deepStrictEqual(explanation.resolution, { _tag: "MethodNotAllowed", allow: ["GET", "HEAD", "POST"] })
    assert.deepStrictEqual(explanation.allow, ["GET", "HEAD", "POST"])
    assert.deepStrictEqual(explanation.candidates.map(({ route }) => route.path), [
      "/users/:id",
      "/users/:id",
      "/users/*rest"
    ])
    for (const { reason, route } of explanation.candidates) {
      assert.strictEqual(reason, `another method: ${route.method}, not DELETE`)
    }
  })

  it("404 and a path normalised as the router does it, with no other normalising", () => {
    assert.deepStrictEqual(RouteTable.explain(users, "GET", "/users/"), {
      resolution: { _tag: "NotFound" },
      allow: [],
      candidates: []
    })
    // %6D is "m", decoded before matching; %2F stays an escape inside one segment.
    const escaped = RouteTable.explain(users, "GET", "/users/%6De")
    assert.strictEqual(servedBy(escaped)?.path, "/users/me")
    const slash = RouteTable.explain(users, "GET", "/users/a%2fb")
    assert.deepStrictEqual(slash.resolution._tag === "Found" && slash.resolution.params, { id: "a/b" })
  })

  it("a malformed path: bad_path, and the routes of the method are told why", () => {
    assert.deepStrictEqual(RouteTable.explain(users, "GET", "/users/%zz"), {
      resolution: { _tag: "BadPath", reason: "\"%\" at index 7 is not followed by two hex digits" },
      allow: [],
      candidates: []
    })
    const notUtf8 = RouteTable.explain(users, "GET", "/users/%FF")
    assert.strictEqual(notUtf8.resolution._tag, "BadPath")
    assert.include(
      reasons(notUtf8),
      "GET /users/:id: the path is malformed: segment 2 is not UTF-8 once percent-decoded"
    )
    assert.include(reasons(notUtf8), "POST /users/:id: another method: POST, not GET")
  })

  it("a route hidden by another of its method and shape (a store that slipped) is named with the one that serves", () => {
    const hidden = Array.from(tableOf("GET /a/:x"))[0]!
    const later = tableOf("GET /a/:y")
    RouteTable.insert(later, hidden)
    // The one inserted last serves.
    const explanation = RouteTable.explain(later, "GET", "/a/1")
    assert.strictEqual(servedBy(explanation)?.id, hidden.id)
    assert.deepStrictEqual(reasons(explanation), [
      `GET /a/:y: GET /a/:x (${hidden.id}) has the same method, shape and conditions and was stored after this route: ` +
      "it serves in its place"
    ])
  })
})
