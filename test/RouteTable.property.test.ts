/**
 * Differential property test of the route table: random tables, changed by random inserts, updates and removes,
 * answer random requests (hits, near misses, escapes of reserved and unreserved characters in both cases, HEAD,
 * trailing slashes, empty segments, malformed escapes, bytes that are not UTF-8) exactly as the plain reference
 * matcher of test/utils does: every route is tried, mixed segments by every split, and the matching ones ranked by
 * specificity. Patterns mix static segments, parameters, mixed segments and wildcards; some tables are made of short
 * routes that compete for each segment. Dense tables, built as those that force a backtracking lookup (long routes
 * of one character with parameters at different positions, shared and branching suffixes, several methods), exercise
 * the lookup's skipping of subtrees whose class failed already, and after every change the classes are checked to be
 * exact.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { isDeepStrictEqual } from "node:util"
import * as Route from "route-registry/Route"
import * as RouteTable from "route-registry/RouteTable"
import * as Match from "../src/internal/http/match.js"
import * as Explain from "../src/internal/table/explain.js"
import * as RouteTree from "../src/internal/table/routeTree.js"
import * as Reference from "./utils/referenceMatcher.js"

// ---------------------------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------------------------

interface ModelRoute {
  readonly route: Route.Route
  /** When it was inserted: of two routes with one method and shape, the later serves. */
  readonly seq: number
}

const model = (routes: ReadonlyArray<ModelRoute>, method: string, target: string): Reference.Expected =>
  Reference.resolve(
    routes.map(({ route, seq }) => ({ id: route.id, method: route.method, path: route.path, seq })),
    method,
    target
  )

// The checks run some millions of times a file, and an assertion of chai's costs more than the lookup it checks: the
// same comparison is made first by hand, and chai's assertion, with its message, only for values that differ.
const strictEqual = <A>(actual: A, expected: A, message?: string): void => {
  if (actual !== expected) assert.strictEqual(actual, expected, message)
}
const deepStrictEqual = <A>(actual: A, expected: A, message?: string): void => {
  if (!isDeepStrictEqual(actual, expected)) assert.deepStrictEqual(actual, expected, message)
}

// Puts a route into the tree through the production parser; the reference reads the same path on its own.
const insert = (tree: RouteTree.Tree<Route.Route>, route: Route.Route): void => RouteTree.insert(tree, route)

const actual = (resolution: RouteTable.Resolution): Reference.Expected => {
  switch (resolution._tag) {
    case "Found":
      return { _tag: "Found", id: resolution.route.id, params: { ...resolution.params } }
    case "MethodNotAllowed":
      return { _tag: "MethodNotAllowed", allow: [...resolution.allow] }
    default:
      return { _tag: resolution._tag }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------------------------

// Few values, so that routes overlap and compete, with escapes of reserved and non-ASCII bytes.
const STATICS = ["a", "b", "me", "x.y", "~", "%2F", "%25", "%C3%A9", "%FF", "a,b", "A"]
const METHODS = ["GET", "HEAD", "POST", "DELETE", "M-SEARCH"]

// Mixed segments as shapes, whose `:`s become named parameters: static text around them that request values hold
// too ("." in "tar.gz", "-" in "1-2"), so that splits compete.
const MIXED = [":.:", ":-:", "v:", ":.json", ":...:", ":.:.:", "a:", ":.a", ":~"]

// Names each `:` of a segment's shape and `*` of a wildcard, uniquely in the path.
const named = (segments: ReadonlyArray<string>): string =>
  "/" + segments.map((s, i) => {
    if (s === "*") return `*w${i}`
    let j = 0
    return s.replace(/:/g, () => `:p${i}_${j++}`)
  }).join("/")

const patternArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.array(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...STATICS) },
        { weight: 2, arbitrary: fc.constant(":") },
        { weight: 2, arbitrary: fc.constantFrom(...MIXED) }
      ),
      { maxLength: 4 }
    ),
    fc.boolean()
  )
  .map(([segments, wildcard]) => named(wildcard && segments.length < 4 ? [...segments, "*"] : segments))

const routeSpecArb = fc.record({ method: fc.constantFrom(...METHODS), path: patternArb })

// Dense tables: up to 10 segments, nearly all "a", parameters at any positions, now and then a "b" that branches a
// suffix off. Most requests then match a prefix of most routes, and many subtrees share their structure.
const DENSE_METHODS = ["GET", "HEAD", "PUT", "POST"]

const densePatternArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.array(
      fc.oneof(
        { weight: 6, arbitrary: fc.constant("a") },
        { weight: 1, arbitrary: fc.constant("b") },
        { weight: 3, arbitrary: fc.constant(":") },
        { weight: 1, arbitrary: fc.constantFrom("a:", ":.:") }
      ),
      { maxLength: 10 }
    ),
    fc.nat(9)
  )
  .map(([segments, wildcard]) => named(wildcard === 0 ? [...segments, "*"] : segments))

const denseSpecArb = fc.record({ method: fc.constantFrom(...DENSE_METHODS), path: densePatternArb })

// Short routes made mostly of mixed segments, parameters and wildcards, so that they compete for one segment.
const mixedPatternArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.array(fc.constantFrom("a", ":", ...MIXED), { minLength: 1, maxLength: 2 }),
    fc.nat(3)
  )
  .map(([segments, wildcard]) => named(wildcard === 0 ? [...segments, "*"] : segments))

const mixedSpecArb = fc.record({ method: fc.constantFrom("GET", "HEAD", "POST"), path: mixedPatternArb })

type Spec = { readonly method: string; readonly path: string }

type Op =
  | { readonly kind: "insert"; readonly method: string; readonly path: string }
  | { readonly kind: "update"; readonly pick: number; readonly method: string; readonly path: string }
  | { readonly kind: "remove"; readonly pick: number }

const opsOf = (specArb: fc.Arbitrary<Spec>): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 5, arbitrary: specArb.map((spec) => ({ kind: "insert" as const, ...spec })) },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.nat(), specArb).map(([pick, spec]) => ({ kind: "update" as const, pick, ...spec }))
    },
    { weight: 2, arbitrary: fc.nat().map((pick) => ({ kind: "remove" as const, pick })) }
  )

// A request segment standing for a parameter: plain values, values equal to static segments, escapes of unreserved
// characters and of reserved ones in either case, bytes that are not UTF-8, malformed escapes and the empty segment.
const valueArb = fc.constantFrom(
  "1",
  "me",
  "a",
  "b",
  "A",
  "%61",
  "%41",
  "%7e",
  "%7E",
  "x%2Ey",
  "%2f",
  "%2F",
  "%25",
  "%c3%a9",
  "%C3%A9",
  "%E2%82%AC",
  "%ff",
  "%C3",
  "%ED%A0%80",
  "a%20b",
  "a,b",
  "%2c",
  "%",
  "%zz",
  "%4",
  "",
  "a.b",
  "tar.gz",
  "a...b...c",
  "1-2",
  "v1",
  ".json",
  "x.json"
)

type Edit = "none" | "slash" | "double" | "drop" | "extra" | "query" | "lower" | "upper" | "encode"

const editArb = fc.constantFrom<Edit>(
  "none",
  "none",
  "none",
  "slash",
  "double",
  "drop",
  "extra",
  "query",
  "lower",
  "upper",
  "encode"
)

interface RequestSpec {
  readonly method: string
  readonly pick: number
  readonly values: ReadonlyArray<string>
  /** The extra segments a wildcard takes beyond its first. */
  readonly rest: ReadonlyArray<string>
  readonly edit: Edit
  readonly random: string | undefined
}

const requestArb: fc.Arbitrary<RequestSpec> = fc.record({
  method: fc.constantFrom(...METHODS, "PUT", "get"),
  pick: fc.nat(),
  values: fc.array(valueArb, { minLength: 4, maxLength: 4 }),
  rest: fc.array(valueArb, { maxLength: 2 }),
  edit: editArb,
  // Now and then a path made of the same pieces, unrelated to any route.
  random: fc.option(
    fc.array(fc.oneof(fc.constantFrom(...STATICS), valueArb), { maxLength: 4 }).map((s) => "/" + s.join("/")),
    { freq: 4 }
  ).map((s) => s ?? undefined)
})

// Against dense tables: parameter values that keep most routes alive ("a"), branch ("b") or match parameters only
// ("x"), and as often a path of those pieces unrelated to any route.
const denseValueArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant("a") },
  { weight: 1, arbitrary: fc.constantFrom("b", "x", "%61", "%FF", "", "a.a", "aa") }
)

const denseRequestArb: fc.Arbitrary<RequestSpec> = fc.record({
  method: fc.constantFrom(...DENSE_METHODS, "DELETE"),
  pick: fc.nat(),
  values: fc.array(denseValueArb, { minLength: 11, maxLength: 11 }),
  rest: fc.array(denseValueArb, { maxLength: 2 }),
  edit: editArb,
  random: fc.option(fc.array(denseValueArb, { maxLength: 11 }).map((s) => "/" + s.join("/")), { freq: 2 })
    .map((s) => s ?? undefined)
})

// Values that several mixed segments split at once.
const mixedValueArb = fc.constantFrom("a", "a.a", "v1.json", "a...b.json", "a-b.a", "v.a~", "a.b.c", "%FF.json", "")

const mixedRequestArb: fc.Arbitrary<RequestSpec> = fc.record({
  method: fc.constantFrom("GET", "HEAD", "POST", "PUT"),
  pick: fc.nat(),
  values: fc.array(mixedValueArb, { minLength: 4, maxLength: 4 }),
  rest: fc.array(mixedValueArb, { maxLength: 2 }),
  edit: editArb,
  random: fc.option(fc.array(mixedValueArb, { minLength: 1, maxLength: 3 }).map((s) => "/" + s.join("/")), {
    freq: 3
  }).map((s) => s ?? undefined)
})

// The target of a request: a route's pattern with values for its parameters, then one edit.
const targetOf = (spec: RequestSpec, routes: ReadonlyArray<ModelRoute>): string => {
  if (spec.random !== undefined || routes.length === 0) return spec.random ?? "/"
  const pattern = Reference.parsePattern(routes[spec.pick % routes.length]!.route.path)
  const segments = pattern.map((s, i) => {
    switch (s._tag) {
      case "Static":
        return s.value
      case "Param":
        return spec.values[i]!
      case "Mixed":
        return s.parts.map((part, j) => (part._tag === "Static" ? part.value : spec.values[(i + j) % 4]!)).join("")
      case "Wildcard":
        return [spec.values[i]!, ...spec.rest].join("/")
    }
  })
  const path = "/" + segments.join("/")
  switch (spec.edit) {
    case "none":
      return path
    case "slash":
      return path === "/" ? "//" : path + "/"
    case "double":
      return path.replace("/", "//")
    case "drop":
      return "/" + segments.slice(0, -1).join("/")
    case "extra":
      return (path === "/" ? "" : path) + "/" + spec.values[0]!
    case "query":
      return path + "?q=%zz&r=/a/b"
    case "lower":
      return path.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())
    case "upper":
      return path.toUpperCase()
    case "encode":
      return path.replace(/[a-z]/, (c) => "%" + c.charCodeAt(0).toString(16))
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The classes
// ---------------------------------------------------------------------------------------------------------------

// The classes are exact: two nodes share one exactly when their depths and suffix structures are equal (the methods
// ending at each node below, the static keys, the parameters), as computed here from scratch; and the tree keeps no
// class that no node has.
const checkClasses = (tree: RouteTree.Tree<Route.Route>): void => {
  const structures = new Map<string, number>()
  const classOf = new Map<number, unknown>()
  const structureOf = new Map<unknown, number>()
  const visit = (node: RouteTree.Node<Route.Route>): number => {
    const statics = Array.from(node.statics ?? [], ([key, child]) => `${key}>${visit(child)}`).sort()
    const mixed = Array.from(node.mixed ?? [], (child) => `${child.key}>${visit(child)}`).sort()
    const param = node.param === undefined ? "" : String(visit(node.param))
    const wildcard = node.wildcard === undefined ? "" : String(visit(node.wildcard))
    const methods = Array.from(node.leaves?.keys() ?? []).sort()
    const key = `${node.depth}|${methods.join(",")}|${param}|${wildcard}|${statics.join("/")}|${mixed.join("/")}`
    let structure = structures.get(key)
    if (structure === undefined) structures.set(key, structure = structures.size)
    if (node.class === undefined) assert.isDefined(node.class, key)
    strictEqual(classOf.get(structure) ?? node.class, node.class, `one structure, two classes: ${key}`)
    strictEqual(structureOf.get(node.class) ?? structure, structure, `one class, two structures: ${key}`)
    classOf.set(structure, node.class)
    structureOf.set(node.class, structure)
    return structure
  }
  visit(tree.root)
  let kept = 0
  for (const head of tree.classes.values()) {
    for (let cls: typeof head | undefined = head; cls; cls = cls.nextWithHash) kept++
  }
  strictEqual(kept, structureOf.size, "the tree keeps a class no node has")
}

// ---------------------------------------------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------------------------------------------

// The table's tree: the one a `RouteTable` has, or one that finds classes by 3 bits of their hash, so that most
// nodes collide with nodes of other structures and only the comparison keeps the classes exact.
const fullHash = () => RouteTable.empty().tree
const threeBitHash = () => new RouteTree.Tree<Route.Route>(0b111)

type Check = (
  tree: RouteTree.Tree<Route.Route>,
  routes: ReadonlyArray<ModelRoute>,
  method: string,
  target: string
) => void

// The table's lookup answers as the model does.
const resolvesAsTheModel: Check = (tree, routes, method, target) =>
  deepStrictEqual(actual(RouteTree.lookup(tree, method, target)), model(routes, method, target), target)

// `GET /v1/routing/match` answers what the table's lookup and the model answer (outcome, route, params, allow), and
// its candidates are exactly the other routes whose patterns match the path, each with a reason that holds.
const explainsAsTheModel: Check = (tree, routes, method, target) => {
  const body = JSON.parse(Match.bodyOf(Explain.explain(tree, method, target)))
  const expected = model(routes, method, target)
  const reference = routes.map(({ route, seq }) => ({ id: route.id, method: route.method, path: route.path, seq }))
  const matches = Reference.matching(reference, target) ?? []
  const allow = new Set(matches.map((match) => match.route.method))
  if (allow.has("GET")) allow.add("HEAD")
  const outcome = { Found: "route", MethodNotAllowed: "method_not_allowed", NotFound: "not_found", BadPath: "bad_path" }
  strictEqual(body.outcome, outcome[expected._tag], target)
  deepStrictEqual(body.route?.id, expected._tag === "Found" ? expected.id : undefined, target)
  deepStrictEqual(body.params, expected._tag === "Found" ? expected.params : null, target)
  deepStrictEqual(body.allow, expected._tag === "BadPath" ? [] : [...allow].sort(), target)
  const winner = matches.find((match) => expected._tag === "Found" && match.route.id === expected.id)
  assert.sameMembers(
    body.candidates.map((candidate: { route: { id: string } }) => candidate.route.id),
    matches.filter((match) => match !== winner).map((match) => match.route.id),
    target
  )
  for (const { reason, route } of body.candidates as ReadonlyArray<{ route: Route.Route; reason: string }>) {
    const match = matches.find((match) => match.route.id === route.id)!
    if (winner === undefined || match.route.method !== winner.route.method) continue
    const order = Reference.compareSpecificity(winner.pattern, match.pattern)
    // A route hidden by another of its method and shape (stores that slipped) is told so, whoever serves the request.
    const twin = matches.some((other) =>
      other !== match && other.route.method === route.method &&
      Reference.shapeOf(other.route.path) === Reference.shapeOf(route.path)
    )
    if (order === 0 || (twin && reason.includes("same method, shape and conditions"))) {
      assert.include(reason, "same method, shape and conditions", target)
    } else {
      assert.isBelow(order, 0, `${winner.route.path} beats ${route.path} for ${target}`)
      // The segment named is the first where the two shapes differ.
      const theirs = Reference.shapeOf(winner.route.path).split("/")
      const mine = Reference.shapeOf(route.path).split("/")
      assert.include(reason, `at segment ${theirs.findIndex((s, i) => s !== mine[i])},`, target)
    }
  }
}

const agreesAfterEveryChange = (
  ops: fc.Arbitrary<ReadonlyArray<Op>>,
  requests: fc.Arbitrary<ReadonlyArray<RequestSpec>>,
  numRuns: number,
  makeTree: () => RouteTree.Tree<Route.Route> = fullHash,
  check: Check = resolvesAsTheModel
) => {
  let clock = Date.UTC(2026, 10, 23)
  fc.assert(
    fc.property(ops, requests, (ops, requests) => {
      const tree = makeTree()
      let routes: Array<ModelRoute> = []
      let seq = 0
      const make = (method: string, path: string, id?: string) =>
        new Route.Route({
          id: (id ?? Route.makeRouteId(clock++)) as Route.RouteId,
          method: method as Route.HttpMethod,
          path: path as Route.RoutePath,
          middleware: [],
          handler: "h" as Route.HandlerName,
          createdAt: new Date(clock)
        })
      for (const op of ops) {
        if (op.kind === "insert") {
          const route = make(op.method, op.path)
          insert(tree, route)
          routes.push({ route, seq: seq++ })
        } else if (routes.length > 0) {
          const victim = routes[op.pick % routes.length]!
          routes = routes.filter((r) => r !== victim)
          if (op.kind === "update") {
            const route = make(op.method, op.path, victim.route.id)
            insert(tree, route)
            routes.push({ route, seq: seq++ })
          } else {
            RouteTree.remove(tree, victim.route.id)
          }
        }
        strictEqual(tree.byId.size, routes.length)
        checkClasses(tree)
        for (const request of requests) {
          check(tree, routes, request.method, targetOf(request, routes))
        }
      }
      for (const { route } of routes) RouteTree.remove(tree, route.id)
      assert.strictEqual(tree.root.statics, undefined, "removing every route leaves no node behind")
      assert.strictEqual(tree.root.param, undefined, "removing every route leaves no node behind")
      assert.strictEqual(tree.root.mixed, undefined, "removing every route leaves no node behind")
      assert.strictEqual(tree.root.wildcard, undefined, "removing every route leaves no node behind")
      checkClasses(tree)
    }),
    { numRuns }
  )
}

describe("RouteTable (property-based, against a brute-force model of docs/router.md's matching rules)", () => {
  it("answers every request as the model does, after every insert, update and remove", () => {
    agreesAfterEveryChange(
      fc.array(opsOf(routeSpecArb), { minLength: 1, maxLength: 24 }),
      fc.array(requestArb, { minLength: 6, maxLength: 6 }),
      1500
    )
  })

  const denseOps = fc.array(opsOf(denseSpecArb), { minLength: 1, maxLength: 40 })
  const denseRequests = fc.array(denseRequestArb, { minLength: 8, maxLength: 8 })

  it("answers as the model does when mixed segments, parameters and wildcards compete for each segment", () => {
    agreesAfterEveryChange(
      fc.array(opsOf(mixedSpecArb), { minLength: 1, maxLength: 24 }),
      fc.array(mixedRequestArb, { minLength: 8, maxLength: 8 }),
      1000
    )
  })

  it("answers as the model does on dense tables built to force backtracking, after every change", () => {
    agreesAfterEveryChange(denseOps, denseRequests, 1000)
  })

  it("and so it does when structure hashes collide all the time: a collision never joins two structures", () => {
    agreesAfterEveryChange(denseOps, denseRequests, 500, threeBitHash)
  })

  it("GET /v1/routing/match answers as the table and the model do, its candidates every other route matching", () => {
    for (const [specs, requests] of [[routeSpecArb, requestArb], [mixedSpecArb, mixedRequestArb]] as const) {
      const ops = fc.array(opsOf(specs), { minLength: 1, maxLength: 24 })
      agreesAfterEveryChange(ops, fc.array(requests, { minLength: 8, maxLength: 8 }), 200, fullHash, explainsAsTheModel)
    }
    agreesAfterEveryChange(denseOps, denseRequests, 80, fullHash, explainsAsTheModel)
  })

  it("agrees with the model on tables that keep the stores' rule (one route per method and shape)", () => {
    let clock = Date.UTC(2026, 10, 24)
    fc.assert(
      fc.property(
        fc.uniqueArray(routeSpecArb, {
          maxLength: 40,
          selector: (spec) => `${spec.method} ${Reference.shapeOf(spec.path)}`
        }),
        fc.array(requestArb, { minLength: 30, maxLength: 30 }),
        (specs, requests) => {
          const routes = specs.map((spec, seq) => ({
            route: new Route.Route({
              id: Route.makeRouteId(clock++),
              method: spec.method as Route.HttpMethod,
              path: spec.path as Route.RoutePath,
              middleware: [],
              handler: "h" as Route.HandlerName,
              createdAt: new Date(clock)
            }),
            seq
          }))
          const table = RouteTable.empty()
          for (const { route } of routes) insert(table.tree, route)
          const reference = routes.map(({ route, seq }) => ({ ...route, seq }))
          for (const request of requests) {
            const target = targetOf(request, routes)
            const expected = model(routes, request.method, target)
            deepStrictEqual(actual(RouteTable.lookup(table, request.method, target)), expected, target)
            // No two routes of one method match one request with equal precedence: one of them always wins.
            const matches = Reference.matching(reference, target) ?? []
            for (const a of matches) {
              for (const b of matches) {
                if (a === b || a.route.method !== b.route.method) continue
                const order = Reference.compareSpecificity(a.pattern, b.pattern)
                if (order === 0) assert.notStrictEqual(order, 0, `${a.route.path} ~ ${b.route.path}`)
              }
            }
          }
        }
      ),
      { numRuns: 1500 }
    )
  })
})
