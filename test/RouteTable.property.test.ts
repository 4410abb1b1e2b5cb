/**
 * Differential property test of the route table (CONTRACT §10): random tables, changed by random inserts, updates and
 * removes, answer random requests (hits, near misses, escapes of reserved and unreserved characters in both cases,
 * HEAD, trailing slashes, empty segments, malformed escapes, bytes that are not UTF-8) exactly as a brute-force model
 * written here from the contract: every route is tried, and the matching ones ranked by specificity. Dense tables,
 * built as those that force a backtracking lookup (long routes of one character with parameters at different
 * positions, shared and branching suffixes, several methods), exercise the lookup's skipping of subtrees whose class
 * failed already, and after every change the classes are checked to be exact.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Route from "route-registry/Route"
import * as RouteTable from "route-registry/RouteTable"
import * as RouteTree from "../src/internal/table/routeTree.js"

// ---------------------------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------------------------

interface ModelRoute {
  readonly route: Route.Route
  /** When it was inserted: of two routes with one method and shape, the later serves. */
  readonly seq: number
}

const segmentsOf = (path: string): ReadonlyArray<string> => (path === "/" ? [] : path.slice(1).split("/"))

const normalise = (path: string): string =>
  path.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16))
    return /^[A-Za-z0-9\-._~]$/.test(char) ? char : "%" + hex.toUpperCase()
  })

const matches = (pattern: ReadonlyArray<string>, request: ReadonlyArray<string>): boolean =>
  pattern.length === request.length &&
  pattern.every((segment, i) => segment.startsWith(":") ? request[i] !== "" : segment === request[i])

// Static before parameter, segment by segment: the smallest key is the most specific pattern.
const specificity = (pattern: ReadonlyArray<string>): string =>
  pattern.map((s) => (s.startsWith(":") ? "1" : "0")).join("")

const mostSpecific = (candidates: ReadonlyArray<ModelRoute>): ModelRoute | undefined =>
  candidates.reduce<ModelRoute | undefined>((best, candidate) => {
    if (best === undefined) return candidate
    const a = specificity(segmentsOf(candidate.route.path))
    const b = specificity(segmentsOf(best.route.path))
    return a < b || (a === b && candidate.seq > best.seq) ? candidate : best
  }, undefined)

type Expected =
  | { readonly _tag: "Found"; readonly id: string; readonly params: Record<string, string> }
  | { readonly _tag: "MethodNotAllowed"; readonly allow: ReadonlyArray<string> }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "BadPath" }

const model = (routes: ReadonlyArray<ModelRoute>, method: string, target: string): Expected => {
  const query = target.indexOf("?")
  const raw = query === -1 ? target : target.slice(0, query)
  if (/%(?![0-9A-Fa-f]{2})/.test(raw)) return { _tag: "BadPath" }
  const request = segmentsOf(normalise(raw))
  const matching = routes.filter((r) => matches(segmentsOf(r.route.path), request))
  const ofMethod = (m: string) => matching.filter((r) => r.route.method === m)
  const winner = method === "HEAD"
    ? mostSpecific(ofMethod("HEAD")) ?? mostSpecific(ofMethod("GET"))
    : mostSpecific(ofMethod(method))
  if (winner !== undefined) {
    const params: Record<string, string> = {}
    const pattern = segmentsOf(winner.route.path)
    for (let i = 0; i < pattern.length; i++) {
      if (!pattern[i]!.startsWith(":")) continue
      try {
        params[pattern[i]!.slice(1)] = decodeURIComponent(request[i]!)
      } catch {
        return { _tag: "BadPath" }
      }
    }
    return { _tag: "Found", id: winner.route.id, params }
  }
  const allow = new Set<string>(matching.map((r) => r.route.method))
  if (allow.has("GET")) allow.add("HEAD")
  if (allow.size === 0) return { _tag: "NotFound" }
  return { _tag: "MethodNotAllowed", allow: [...allow].sort() }
}

const actual = (resolution: RouteTable.Resolution): Expected => {
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

const patternArb: fc.Arbitrary<string> = fc
  .array(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...STATICS) }, { weight: 2, arbitrary: fc.constant(":") }), {
    maxLength: 4
  })
  .map((segments) => "/" + segments.map((s, i) => (s === ":" ? `:p${i}` : s)).join("/"))

const routeSpecArb = fc.record({ method: fc.constantFrom(...METHODS), path: patternArb })

// Dense tables: up to 10 segments, nearly all "a", parameters at any positions, now and then a "b" that branches a
// suffix off. Most requests then match a prefix of most routes, and many subtrees share their structure.
const DENSE_METHODS = ["GET", "HEAD", "PUT", "POST"]

const densePatternArb: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      { weight: 6, arbitrary: fc.constant("a") },
      { weight: 1, arbitrary: fc.constant("b") },
      { weight: 3, arbitrary: fc.constant(":") }
    ),
    { maxLength: 10 }
  )
  .map((segments) => "/" + segments.map((s, i) => (s === ":" ? `:p${i}` : s)).join("/"))

const denseSpecArb = fc.record({ method: fc.constantFrom(...DENSE_METHODS), path: densePatternArb })

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
  ""
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
  readonly edit: Edit
  readonly random: string | undefined
}

const requestArb: fc.Arbitrary<RequestSpec> = fc.record({
  method: fc.constantFrom(...METHODS, "PUT", "get"),
  pick: fc.nat(),
  values: fc.array(valueArb, { minLength: 4, maxLength: 4 }),
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
  { weight: 1, arbitrary: fc.constantFrom("b", "x", "%61", "%FF", "") }
)

const denseRequestArb: fc.Arbitrary<RequestSpec> = fc.record({
  method: fc.constantFrom(...DENSE_METHODS, "DELETE"),
  pick: fc.nat(),
  values: fc.array(denseValueArb, { minLength: 10, maxLength: 10 }),
  edit: editArb,
  random: fc.option(fc.array(denseValueArb, { maxLength: 11 }).map((s) => "/" + s.join("/")), { freq: 2 })
    .map((s) => s ?? undefined)
})

// The target of a request: a route's pattern with values for its parameters, then one edit.
const targetOf = (spec: RequestSpec, routes: ReadonlyArray<ModelRoute>): string => {
  if (spec.random !== undefined || routes.length === 0) return spec.random ?? "/"
  const pattern = segmentsOf(routes[spec.pick % routes.length]!.route.path)
  const segments = pattern.map((s, i) => (s.startsWith(":") ? spec.values[i]! : s))
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
    const param = node.param === undefined ? "" : String(visit(node.param))
    const methods = Array.from(node.leaves?.keys() ?? []).sort()
    const key = `${node.depth}|${methods.join(",")}|${param}|${statics.join("/")}`
    let structure = structures.get(key)
    if (structure === undefined) structures.set(key, structure = structures.size)
    assert.isDefined(node.class, key)
    assert.strictEqual(classOf.get(structure) ?? node.class, node.class, `one structure, two classes: ${key}`)
    assert.strictEqual(structureOf.get(node.class) ?? structure, structure, `one class, two structures: ${key}`)
    classOf.set(structure, node.class)
    structureOf.set(node.class, structure)
    return structure
  }
  visit(tree.root)
  let kept = 0
  for (const head of tree.classes.values()) {
    for (let cls: typeof head | undefined = head; cls; cls = cls.nextWithHash) kept++
  }
  assert.strictEqual(kept, structureOf.size, "the tree keeps a class no node has")
}

// ---------------------------------------------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------------------------------------------

// The table's tree: the one a `RouteTable` has, or one that finds classes by 3 bits of their hash, so that most
// nodes collide with nodes of other structures and only the comparison keeps the classes exact.
const fullHash = () => RouteTable.empty().tree
const threeBitHash = () => new RouteTree.Tree<Route.Route>(0b111)

const agreesAfterEveryChange = (
  ops: fc.Arbitrary<ReadonlyArray<Op>>,
  requests: fc.Arbitrary<ReadonlyArray<RequestSpec>>,
  numRuns: number,
  makeTree: () => RouteTree.Tree<Route.Route> = fullHash
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
          RouteTree.insert(tree, route)
          routes.push({ route, seq: seq++ })
        } else if (routes.length > 0) {
          const victim = routes[op.pick % routes.length]!
          routes = routes.filter((r) => r !== victim)
          if (op.kind === "update") {
            const route = make(op.method, op.path, victim.route.id)
            RouteTree.insert(tree, route)
            routes.push({ route, seq: seq++ })
          } else {
            RouteTree.remove(tree, victim.route.id)
          }
        }
        assert.strictEqual(tree.byId.size, routes.length)
        checkClasses(tree)
        for (const request of requests) {
          const target = targetOf(request, routes)
          const expected = model(routes, request.method, target)
          const got = actual(RouteTree.lookup(tree, request.method, target))
          assert.deepStrictEqual(got, expected, `${request.method} ${target}`)
        }
      }
      for (const { route } of routes) RouteTree.remove(tree, route.id)
      assert.strictEqual(tree.root.statics, undefined, "removing every route leaves no node behind")
      assert.strictEqual(tree.root.param, undefined, "removing every route leaves no node behind")
      checkClasses(tree)
    }),
    { numRuns }
  )
}

describe("RouteTable (property-based, against a brute-force model of §10)", () => {
  it("answers every request as the model does, after every insert, update and remove", () => {
    agreesAfterEveryChange(
      fc.array(opsOf(routeSpecArb), { minLength: 1, maxLength: 24 }),
      fc.array(requestArb, { minLength: 6, maxLength: 6 }),
      1500
    )
  })

  const denseOps = fc.array(opsOf(denseSpecArb), { minLength: 1, maxLength: 40 })
  const denseRequests = fc.array(denseRequestArb, { minLength: 8, maxLength: 8 })

  it("answers as the model does on dense tables built to force backtracking, after every change", () => {
    agreesAfterEveryChange(denseOps, denseRequests, 1000)
  })

  it("and so it does when structure hashes collide all the time: a collision never joins two structures", () => {
    agreesAfterEveryChange(denseOps, denseRequests, 500, threeBitHash)
  })

  it("agrees with the model on tables that keep the stores' rule (one route per method and shape)", () => {
    let clock = Date.UTC(2026, 10, 24)
    fc.assert(
      fc.property(
        fc.uniqueArray(routeSpecArb, {
          maxLength: 40,
          selector: (spec) => `${spec.method} ${Route.shapeOf(spec.path as Route.RoutePath)}`
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
          const table = RouteTable.fromIterable(routes.map((r) => r.route))
          for (const request of requests) {
            const target = targetOf(request, routes)
            const expected = model(routes, request.method, target)
            assert.deepStrictEqual(actual(RouteTable.lookup(table, request.method, target)), expected, target)
          }
        }
      ),
      { numRuns: 1500 }
    )
  })
})
