/**
 * A differential test of the route table against find-my-way (the router of Fastify), over the GitHub REST API's
 * routes and requests generated from each of them (realistic values with `.`, `-`, escapes and UTF-8, HEAD, wrong
 * methods, trailing slashes, extra and missing segments, empty, long and malformed values, escapes in either case),
 * over a set of routes with the other forms of the grammar (wildcards, mixed segments competing), and over random
 * tables. Every difference must fall into a class named after a rule of the contract (test/utils/
 * findMyWayDifferential.ts lists them; docs/router.md explains each): an unexplained one fails, and so does a class
 * that no longer shows, so the list stays exact. The figures are printed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import FindMyWay from "find-my-way"
import * as Route from "route-registry/Route"
import { githubRoutes } from "./fixtures/githubRoutes.js"
import * as Differential from "./utils/findMyWayDifferential.js"
import * as Reference from "./utils/referenceMatcher.js"

// mulberry32: the same requests on every run.
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

// Values as they arrive in a request: names with `.` and `-`, numbers, escapes of reserved characters, of
// unreserved ones (either case) and of UTF-8, and text that looks like the static text of a mixed segment.
const VALUES = [
  "octocat",
  "hello-world",
  "repo.js",
  "v1.2.3",
  "42",
  "1296269",
  "main",
  "feature%2Fnew-ui",
  "a%20b",
  "caf%C3%A9",
  "caf%c3%a9",
  "%E2%9C%93",
  "under_score",
  "tilde~x",
  "%7Euser",
  "semi;colon",
  "plus+sign",
  "x%25y",
  "octocat:main",
  "a...b"
]

// A long branch name: over find-my-way's default limit of 100 characters for a parameter.
const LONG = "release/2026-11".padEnd(120, "-x").replace("/", "%2F")
const MALFORMED = ["%zz", "%FF", "%C3"]
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

// The request path for a pattern, each parameter (of a whole or a mixed segment) and wildcard given a value.
const fill = (path: string, value: (name: string) => string): string =>
  path.replace(/[:*]([A-Za-z0-9_]+)/g, (_, name: string) => value(name))

// A static segment's first letter as an escape, lowercase (RFC 3986 decodes it back): `/r%65pos/...`.
const escapeFirstStatic = (path: string): string =>
  path.replace(/^\/([a-z])/, (_, letter: string) => "/%" + letter.charCodeAt(0).toString(16))

const requestsFor = (routes: ReadonlyArray<readonly [string, string]>, seed: number): Array<Differential.Request> => {
  const next = random(seed)
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)]!
  const requests: Array<Differential.Request> = []
  for (const [method, path] of routes) {
    const hasParams = /[:*]/.test(path)
    const hit = () => fill(path, () => pick(VALUES))
    const one = (value: string) => {
      const names = Reference.namesOf(path)
      const chosen = names[Math.floor(next() * names.length)]
      return fill(path, (name) => (name === chosen ? value : pick(VALUES)))
    }
    requests.push(
      { method, target: hit() },
      { method, target: escapeFirstStatic(hit()) },
      { method, target: hit() + "?per_page=100&page=2" },
      { method: "HEAD", target: hit() },
      { method: pick(METHODS), target: hit() },
      { method, target: hit() + "/" },
      { method, target: hit() + "/extra" },
      { method, target: hit().toUpperCase() }
    )
    if (path !== "/") {
      const target = hit()
      requests.push({ method, target: target.slice(0, target.lastIndexOf("/")) || "/" })
    }
    // Values holding the static text of a mixed segment, where splits differ.
    if (Reference.parsePattern(path).some((segment) => segment._tag === "Mixed")) {
      for (const value of ["a...b", "v1.0", "a-b", "x.json"]) requests.push({ method, target: fill(path, () => value) })
    }
    if (hasParams) {
      requests.push(
        { method, target: one("") },
        { method, target: one(LONG) },
        { method, target: one(pick(MALFORMED)) },
        { method, target: one("a%2Fb/c") }
      )
    }
  }
  return requests
}

const report = (name: string, routes: number, result: Differential.Differential) => {
  const classes = Object.entries(result.classes).map(([cls, n]) => `${cls} ${n}`).join(", ")
  console.log(
    `find-my-way differential, ${name}: ${routes} routes, ${result.requests} requests, ${result.agreements} agree; ` +
      `differences: ${classes || "none"}`
  )
}

const unexplained = (result: Differential.Differential) =>
  assert.deepStrictEqual(result.unexplained.slice(0, 10), [], `${result.unexplained.length} unexplained`)

const ENTERPRISE_TEAM = ":enterprise-team"
const renamed = githubRoutes.map(([method, path]) =>
  [method, path.replace(ENTERPRISE_TEAM, ":enterprise_team")] as const
)

// The other forms of the grammar, which the GitHub routes hardly use: wildcards beside static and parameter siblings,
// mixed segments competing in one position, precedence with backtracking.
const FORMS: ReadonlyArray<readonly [string, string]> = [
  ["GET", "/files/*rest"],
  ["POST", "/files/*rest"],
  ["GET", "/files/readme"],
  ["GET", "/assets/:file.:ext"],
  ["GET", "/assets/:name.min.js"],
  ["GET", "/api/v:major/users/:id"],
  ["GET", "/range/:from-:to"],
  ["GET", "/x/:a.:b.:c"],
  ["GET", "/users/me"],
  ["GET", "/users/:id"],
  ["GET", "/users/:id.json"],
  ["GET", "/users/*rest"],
  ["GET", "/a/b/:y"],
  ["GET", "/a/:x/c"],
  ["GET", "/spa/*path"]
]

const FORM_REQUESTS: ReadonlyArray<Differential.Request> = [
  "/files/a/b/c",
  "/files/a%2Fb/c",
  "/files/caf%C3%A9/%E2%9C%93.txt",
  "/files/a//b",
  "/files/a/",
  "/files/",
  "/files",
  "/assets/archive.tar.gz",
  "/assets/app.min.js",
  "/assets/.x",
  "/assets/x.",
  "/range/1-2-3",
  "/x/1.2.3.4",
  "/api/v2/users/7",
  "/api/v/users/7",
  "/users/x.json",
  "/users/a/b",
  "/a/b/c",
  "/a/b/d",
  "/spa/",
  "/spa/app/settings/profile"
].map((target) => ({ method: "GET", target }))

// Random tables: few static values, parameters, mixed segments whose static text request values hold too, and
// wildcards, so that routes overlap and compete; requests made from a route's pattern, then edited.
const MIXED = [":.:", ":-:", "v:", ":.json", ":...:", "a:"]

const named = (segments: ReadonlyArray<string>): string =>
  "/" + segments.map((segment, i) => {
    if (segment === "*") return `*w${i}`
    let j = 0
    return segment.replace(/:/g, () => `:p${i}_${j++}`)
  }).join("/")

const specArb = fc.record({
  method: fc.constantFrom("GET", "POST", "HEAD"),
  path: fc.tuple(
    fc.array(
      fc.oneof(fc.constantFrom("a", "b", "me", "caf%C3%A9", "%2F"), fc.constant(":"), fc.constantFrom(...MIXED)),
      { maxLength: 4 }
    ),
    fc.boolean()
  ).map(([segments, wildcard]) => named(wildcard ? [...segments, "*"] : segments))
})

const RANDOM_VALUES = [
  "caf%C3%A9",
  "caf%c3%a9",
  "%2f",
  "1",
  "a",
  "b",
  "me",
  "x.json",
  "tar.gz",
  "a.b",
  "1-2",
  "v1",
  "a...b...c",
  "%2F",
  "%c3%a9",
  "%61"
]

const requestArb = fc.record({
  route: fc.nat(),
  method: fc.constantFrom("GET", "POST", "HEAD", "PUT"),
  values: fc.array(fc.constantFrom(...RANDOM_VALUES, "", "%FF"), { minLength: 8, maxLength: 8 }),
  rest: fc.constantFrom("", "/c", "/c/d", "//c", "/"),
  edit: fc.constantFrom("none", "none", "slash", "drop", "extra")
})

const requestOf = (path: string, pick: typeof requestArb extends fc.Arbitrary<infer A> ? A : never) => {
  let i = 0
  let target = path.replace(/:[A-Za-z0-9_]+/g, () => pick.values[i++ % 8]!)
  target = target.replace(/\*[A-Za-z0-9_]+$/, () => (pick.values[i++ % 8]! || "w") + pick.rest)
  if (pick.edit === "slash") target += "/"
  if (pick.edit === "extra") target += "/x"
  if (pick.edit === "drop") target = target.slice(0, target.lastIndexOf("/")) || "/"
  return { method: pick.method, target } satisfies Differential.Request
}

// The classes of difference on route sets written by hand (GitHub's, and the forms of the grammar), each of them seen.
const WRITTEN_ROUTE_CLASSES = ["badPath", "emptyValue", "head", "methodNotAllowed", "mixedSplit", "paramLength"]

describe("the route table against find-my-way", () => {
  it("the 12 enterprise team routes: refused naming the repeated `enterprise`, where find-my-way loses a value", () => {
    const team = githubRoutes.filter(([, path]) => path.includes(ENTERPRISE_TEAM))
    assert.strictEqual(team.length, 12)
    for (const [method, path] of team) {
      const refused = Route.validateCreate({ method, path, handler: "h" })
      assert.isTrue(Either.isLeft(refused))
      assert.match(Either.getOrThrow(Either.flip(refused))[0]!.message, /parameter name "enterprise" .* already used/)
    }
    // find-my-way reads the pattern the same way and keeps only the second value.
    const router = FindMyWay()
    router.on("GET", "/enterprises/:enterprise/teams/:enterprise-team", () => undefined)
    assert.deepStrictEqual(router.find("GET", "/enterprises/acme/teams/core-team")?.params, { enterprise: "core" })
  })

  it("the GitHub REST routes, the 12 renamed: every difference has a rule", () => {
    const routes = renamed.map(([method, path]) => Differential.makeRoute(method, path))
    assert.strictEqual(routes.length, 1223)
    const team = routes.filter((route) => route.path.includes(":enterprise_team"))
    assert.strictEqual(team.length, 12)
    const requests = requestsFor(renamed, 19)
    const result = Differential.run(routes, requests)
    report("GitHub REST API", routes.length, result)
    unexplained(result)
    assert.deepStrictEqual(Object.keys(result.classes).sort(), WRITTEN_ROUTE_CLASSES)
    // Most requests are answered alike: the hits with ordinary values, the near misses, the wrong paths.
    assert.isAbove(result.agreements, result.requests / 2)
  })

  it("the 12 enterprise team routes renamed: accepted, and served alike", () => {
    const routes = renamed.map(([method, path]) => Differential.makeRoute(method, path))
    const team = routes.filter((route) => route.path.includes(":enterprise_team"))
    assert.strictEqual(team.length, 12)
    for (const route of team) {
      assert.isTrue(Either.isRight(Route.validateCreate({ method: route.method, path: route.path, handler: "h" })))
    }
    const hits = team.map((route) => ({
      method: route.method,
      target: fill(
        route.path,
        (name) => (name === "enterprise" ? "acme" : name === "enterprise_team" ? "core-team" : "7")
      )
    }))
    const result = Differential.run(routes, hits)
    assert.deepStrictEqual(result, { requests: 12, agreements: 12, classes: {}, unexplained: [], examples: {} })
  })

  it("wildcards, mixed segments and precedence: every difference has a rule", () => {
    const routes = FORMS.map(([method, path]) => Differential.makeRoute(method, path))
    const result = Differential.run(routes, [...FORM_REQUESTS, ...requestsFor(FORMS, 21)])
    report("wildcards and mixed segments", routes.length, result)
    unexplained(result)
    assert.deepStrictEqual(Object.keys(result.classes).sort(), WRITTEN_ROUTE_CLASSES)
  })

  it("random tables: every difference has a rule", () => {
    const totals = { routes: 0, requests: 0, agreements: 0 }
    const classes: Record<string, number> = {}
    fc.assert(
      fc.property(
        fc.array(specArb, { minLength: 1, maxLength: 24 }),
        fc.array(requestArb, { minLength: 10, maxLength: 40 }),
        (specs, picks) => {
          const byShape = new Map(specs.map((spec) => [`${spec.method} ${Reference.shapeOf(spec.path)}`, spec]))
          const routes = [...byShape.values()].map((spec) => Differential.makeRoute(spec.method, spec.path))
          const requests = picks.map((pick) => requestOf(routes[pick.route % routes.length]!.path, pick))
          const result = Differential.run(routes, requests)
          totals.routes += routes.length
          totals.requests += result.requests
          totals.agreements += result.agreements
          for (const [cls, n] of Object.entries(result.classes)) classes[cls] = (classes[cls] ?? 0) + n
          assert.deepStrictEqual(result.unexplained.slice(0, 3), [])
        }
      ),
      { numRuns: 400, seed: 19 }
    )
    console.log(`find-my-way differential, random tables: ${JSON.stringify(totals)}, ${JSON.stringify(classes)}`)
    assert.deepStrictEqual(Object.keys(classes).sort(), [
      "badPath",
      "emptyValue",
      "escapedStatic",
      "head",
      "methodNotAllowed",
      "mixedSplit"
    ])
  })
})
