/**
 * The route table against find-my-way, request by request: both get the same routes and answer the same requests,
 * and every answer on which they differ is put into a named class of the contract's rules on which stored route
 * serves a request (docs/router.md, "Differences from find-my-way"), or into none. A class is decided from the request and both answers, and checked
 * where it can be: a HEAD difference must vanish when find-my-way is asked for GET, a 405's methods must be the ones
 * find-my-way serves the path with (or differ from it for a reason of their own), a route find-my-way took through an
 * empty value must not match by the table's rules (docs/router.md, "Matching"). No class covers two different routes both taken by the rules: on every request
 * tried, find-my-way ranks matching routes as the table does, so a difference in precedence fails the test.
 *
 * find-my-way is used as it comes (its defaults, which are Fastify's): a wildcard is written `*` there, so `*name`
 * is registered as `*` and its value read back under `name`.
 */
import FindMyWay from "find-my-way"
import * as Route from "route-registry/Route"
import * as RouteTable from "route-registry/RouteTable"
import * as Reference from "./referenceMatcher.js"

/** Each class of difference, with the table's rule behind it. */
export const CLASSES = {
  head: "HEAD is served by the GET route (find-my-way: no route)",
  methodNotAllowed: "no route for this method: 405 with the methods that match (find-my-way: no route)",
  badPath: "a malformed escape or a parameter that is not UTF-8: 400 (find-my-way: no route)",
  emptyValue: "a parameter's value is never empty, nor is a wildcard's segment (find-my-way: an empty value)",
  paramLength: "a parameter matches a segment of any length (find-my-way: none over 100 characters)",
  mixedSplit: "a mixed segment's parameters take the shortest text, left to right (find-my-way: another split)",
  escapedStatic: "a static segment compares with the request as RFC 3986 normalises both (find-my-way: no route)"
} as const

export type DifferenceClass = keyof typeof CLASSES

export interface Request {
  readonly method: string
  readonly target: string
}

/** What a matcher answered, comparable: the route as "METHOD pattern" with its parameters, or a status. */
type Answer =
  | { readonly _tag: "Found"; readonly key: string; readonly params: Record<string, string> }
  | { readonly _tag: "MethodNotAllowed"; readonly allow: ReadonlyArray<string> }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "BadPath" }

/** find-my-way answers with a route or with nothing. */
type TheirAnswer = Extract<Answer, { readonly _tag: "Found" | "NotFound" }>

export interface Differential {
  readonly requests: number
  readonly agreements: number
  readonly classes: Partial<Record<DifferenceClass, number>>
  /** Differences no class explains, as text: the test fails on any. */
  readonly unexplained: ReadonlyArray<string>
  /** One example per class, as text, for the docs. */
  readonly examples: Partial<Record<DifferenceClass, string>>
}

const keyOf = (route: { readonly method: string; readonly path: string }) => `${route.method} ${route.path}`

let clock = Date.UTC(2026, 10, 23)

export const makeRoute = (method: string, path: string): Route.Route =>
  new Route.Route({
    id: Route.makeRouteId(clock++),
    method: method as Route.HttpMethod,
    path: path as Route.RoutePath,
    middleware: [],
    handler: "h" as Route.HandlerName,
    createdAt: new Date(clock)
  })

const wildcardName = (path: string): string | undefined => /\/\*([A-Za-z0-9_]+)$/.exec(path)?.[1]

/** The pattern as find-my-way writes it: a wildcard is an unnamed `*`. */
export const findMyWayPath = (path: string): string => path.replace(/\/\*[A-Za-z0-9_]+$/, "/*")

const noop = () => undefined

interface Matchers {
  readonly ours: (request: Request) => Answer
  readonly theirs: (request: Request) => TheirAnswer
}

const matchers = (routes: ReadonlyArray<Route.Route>): Matchers => {
  const table = RouteTable.fromIterable(routes)
  const router = FindMyWay()
  for (const route of routes) router.on(route.method as "GET", findMyWayPath(route.path), noop, route)
  return {
    ours: ({ method, target }) => {
      const resolution = RouteTable.lookup(table, method, target)
      switch (resolution._tag) {
        case "Found":
          return { _tag: "Found", key: keyOf(resolution.route), params: { ...resolution.params } }
        case "MethodNotAllowed":
          return { _tag: "MethodNotAllowed", allow: resolution.allow }
        default:
          return { _tag: resolution._tag }
      }
    },
    theirs: ({ method, target }) => {
      const found = router.find(method as "GET", target)
      if (found === null) return { _tag: "NotFound" }
      const route = found.store as Route.Route
      const params: Record<string, string> = {}
      for (const [name, value] of Object.entries(found.params)) {
        params[name === "*" ? wildcardName(route.path)! : name] = value as string
      }
      return { _tag: "Found", key: keyOf(route), params }
    }
  }
}

const same = (a: Answer, b: Answer): boolean => JSON.stringify(a) === JSON.stringify(b)

const show = (answer: Answer): string =>
  answer._tag === "Found"
    ? `${answer.key} ${JSON.stringify(answer.params)}`
    : answer._tag === "MethodNotAllowed"
    ? `405 ${answer.allow.join(", ")}`
    : answer._tag

// The names of a pattern's parameters that stand in mixed segments.
const mixedNames = (path: string): ReadonlySet<string> =>
  new Set(
    Reference.parsePattern(path).flatMap((segment) =>
      segment._tag === "Mixed" ? segment.parts.flatMap((part) => (part._tag === "Param" ? [part.name] : [])) : []
    )
  )

const matchesByContract = (
  routes: ReadonlyArray<Reference.ReferenceRoute>,
  method: string,
  target: string,
  key: string
): boolean =>
  (Reference.matching(routes.filter((route) => route.method === method), target) ?? []).some((match) =>
    keyOf(match.route) === key
  )

const longValue = (params: Record<string, string>): boolean =>
  Object.values(params).some((value) => value.split("/").some((part) => encodeURIComponent(part).length > 100))

const patternOf = (key: string): string => key.slice(key.indexOf(" ") + 1)

/**
 * The class of a difference between our answer and find-my-way's to one request, or `undefined` when none explains
 * it. `routes` are the table's, for the checks made against the reference matcher of the table's rules.
 */
const classify = (
  request: Request,
  ours: Answer,
  theirs: TheirAnswer,
  m: Matchers,
  routes: ReadonlyArray<Reference.ReferenceRoute>
): DifferenceClass | undefined => {
  const { method, target } = request
  if (method === "HEAD" && theirs._tag === "NotFound") {
    // find-my-way has no HEAD fallback: asked for GET, it must answer as we did for HEAD (or differ for a reason
    // of its own, which then is the class).
    if (ours._tag === "Found" && ours.key.startsWith("GET ")) {
      const get = m.theirs({ method: "GET", target })
      return same(ours, get) ? "head" : classify({ method: "GET", target }, ours, get, m, routes)
    }
    if (ours._tag === "MethodNotAllowed" && ours.allow.includes("GET")) return "methodNotAllowed"
  }
  if (ours._tag === "MethodNotAllowed" && theirs._tag === "NotFound") {
    // find-my-way must serve the path with each method we list (HEAD through GET).
    // Where it does not, that difference must have a class of its own (a value that is not UTF-8, for one).
    const served = ours.allow.filter((allowed) => allowed !== "HEAD" || !ours.allow.includes("GET"))
    const agreed = (allowed: string) => {
      const other = { method: allowed, target }
      const [a, b] = [m.ours(other), m.theirs(other)]
      return b._tag === "Found" || classify(other, a, b, m, routes) !== undefined
    }
    return served.every(agreed) ? "methodNotAllowed" : undefined
  }
  if (ours._tag === "BadPath" && theirs._tag === "NotFound") return "badPath"
  if (theirs._tag === "Found" && (ours._tag !== "Found" || ours.key !== theirs.key)) {
    // The route find-my-way took must not match by the table's rules: it did only through an empty value.
    const empty = Object.values(theirs.params).some((value) => value === "" || value.split("/").includes(""))
    if (empty && !matchesByContract(routes, method, target, theirs.key)) return "emptyValue"
  }
  // find-my-way takes no value over 100 characters: it answers with no route, or another route that took it whole.
  if (ours._tag === "Found" && (theirs._tag === "NotFound" || theirs.key !== ours.key) && longValue(ours.params)) {
    return "paramLength"
  }
  // find-my-way decodes the request before it compares static segments, so one written with an escape never
  // matches: it answers with no route, or a less specific route that does match.
  if (ours._tag === "Found" && (theirs._tag === "NotFound" || theirs.key !== ours.key)) {
    return patternOf(ours.key).includes("%") ? "escapedStatic" : undefined
  }
  // The same route, with other values: only a mixed segment's parameters may differ.
  if (ours._tag === "Found" && theirs._tag === "Found") {
    const names = mixedNames(patternOf(ours.key))
    const differing = Object.keys(ours.params).filter((name) => ours.params[name] !== theirs.params[name])
    return differing.every((name) => names.has(name)) ? "mixedSplit" : undefined
  }
  return undefined
}

/** Both matchers over the same routes, answering the same requests; every difference classified or reported. */
export const run = (routes: ReadonlyArray<Route.Route>, requests: ReadonlyArray<Request>): Differential => {
  const m = matchers(routes)
  const reference = routes.map((route, seq) => ({ id: route.id, method: route.method, path: route.path, seq }))
  let agreements = 0
  const classes: Partial<Record<DifferenceClass, number>> = {}
  const examples: Partial<Record<DifferenceClass, string>> = {}
  const unexplained: Array<string> = []
  for (const request of requests) {
    const ours = m.ours(request)
    const theirs = m.theirs(request)
    // find-my-way has no 400 and no 405: each is its "no route", and agrees with ours when it has no route either.
    if (same(ours, theirs)) {
      agreements++
      continue
    }
    const text = `${request.method} ${request.target}: ours ${show(ours)}, find-my-way ${show(theirs)}`
    const cls = classify(request, ours, theirs, m, reference)
    if (cls === undefined) {
      unexplained.push(text)
    } else {
      classes[cls] = (classes[cls] ?? 0) + 1
      examples[cls] ??= text
    }
  }
  return { requests: requests.length, agreements, classes, unexplained, examples }
}
