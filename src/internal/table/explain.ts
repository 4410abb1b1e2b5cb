/**
 * Explaining a lookup: the decision the table makes for a request (it is `lookup`'s, so it is the router's), the
 * methods that serve the request's path, and every other route whose pattern matches the path, each with why it does
 * not serve the request. Computed on demand (`GET /v1/routing/match`, `route-registry match`), never while routing:
 * it walks every branch of the tree that matches the path, where a lookup stops at the first route of its method.
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import * as When from "../route/when.js"
import { lookup, split } from "./lookup.js"
import { byteOrder, type Leaf, type Node, PARAM_KEY, type Resolution, type Tree, WILDCARD_KEY } from "./node.js"
import * as RequestPath from "./requestPath.js"
import { staticLength } from "./routeTree.js"

/** A route whose pattern matches the request's path but does not serve the request, and why. */
export interface Candidate<R> {
  readonly route: R
  readonly reason: string
  /** The condition the request fails (`when.headers[0]`), when its conditions alone kept the route from serving. */
  readonly condition?: string
}

export interface Explanation<R> {
  /** What `lookup` resolves the request to. */
  readonly resolution: Resolution<R>
  /**
   * The methods routes serve the path with, sorted, with `HEAD` wherever `GET` is: the `Allow` of a 405, and for a
   * found route the methods beside it; empty when nothing matches or the path is malformed.
   */
  readonly allow: ReadonlyArray<string>
  /** Every other route whose pattern matches the path, the most specific first (the order a lookup tries them). */
  readonly candidates: ReadonlyArray<Candidate<R>>
}

// ---------------------------------------------------------------------------------------------------------------
// Every route whose pattern matches a path
// ---------------------------------------------------------------------------------------------------------------

// The routes ending at `node`, by method in byte order, each method's in order of precedence, each before the routes
// it hides (stores that slipped).
const collect = <R extends Route.Route>(node: Node<R>, out: Array<Leaf<R>>): void => {
  if (node.leaves === undefined) return
  for (const method of Array.from(node.leaves.keys()).sort(byteOrder)) {
    for (let leaf = node.leaves.get(method); leaf !== undefined; leaf = leaf.next) {
      out.push(leaf)
      if (leaf.hidden !== undefined) out.push(...[...leaf.hidden].reverse())
    }
  }
}

// Every branch below `node` that matches the segments of `path` from `start` on, in the order a lookup tries them;
// each node is reached along one branch only, so the walk costs at most the nodes of the table.
const walk = <R extends Route.Route>(node: Node<R>, path: string, start: number, out: Array<Leaf<R>>): void => {
  let end = path.indexOf("/", start)
  if (end === -1) end = path.length
  if (end === start) return
  const last = end === path.length
  const visit = (child: Node<R>) => (last ? collect(child, out) : walk(child, path, end + 1, out))
  const child = node.statics?.get(path.slice(start, end))
  if (child !== undefined) visit(child)
  for (const mixed of node.mixed ?? []) if (split([], mixed.texts!, path, start, end, 0)) visit(mixed)
  if (node.param !== undefined) visit(node.param)
  // A wildcard takes the rest of the path, every segment of it non-empty.
  if (node.wildcard !== undefined && path.indexOf("//", start) === -1 && !path.endsWith("/")) {
    collect(node.wildcard, out)
  }
}

const matching = <R extends Route.Route>(tree: Tree<R>, path: string): Array<Leaf<R>> => {
  const out: Array<Leaf<R>> = []
  if (path === "/") collect(tree.root, out)
  else walk(tree.root, path, 1, out)
  return out
}

const allowOf = (leaves: ReadonlyArray<Leaf<any>>, facts: When.Facts): ReadonlyArray<string> => {
  const methods = new Set(leaves.flatMap((leaf) => metBy(leaf, facts) ? [leaf.route.method] : []))
  if (methods.has("GET")) methods.add("HEAD")
  return Array.from(methods).sort(byteOrder)
}

// ---------------------------------------------------------------------------------------------------------------
// Why a route does not serve
// ---------------------------------------------------------------------------------------------------------------

const name = (route: Route.Route) =>
  `${route.method} ${route.path}${route.when === undefined ? "" : ` when ${When.keyOf(route.when)}`}`

const metBy = (leaf: Leaf<any>, facts: When.Facts): boolean => leaf.when === undefined || When.meets(leaf.when, facts)

// Why `leaf`, of the winner's method and shape, loses to it: the first rule of precedence among conditions that
// tells them apart (docs/router.md: conditions).
const outrankedByConditions = (leaf: Leaf<any>, winner: Leaf<any>): string => {
  const a = winner.when
  const b = leaf.when
  const prefix = `${name(winner.route)} serves: it has the same method and shape, and`
  const hostKind = (when: When.When | undefined) =>
    when?.host === undefined
      ? "no host"
      : when.host.startsWith("*.")
      ? `the wildcard host ${when.host}`
      : `the host ${when.host}`
  if (a?.host !== b?.host) {
    return `${prefix} ${hostKind(a)} beats ${hostKind(b)} (an exact host beats a wildcard, a longer suffix a shorter ` +
      "one, any host none)"
  }
  const count = (list: ReadonlyArray<When.Condition> | undefined) => list?.length ?? 0
  if (count(a?.headers) !== count(b?.headers)) {
    return `${prefix} its ${count(a?.headers)} header conditions beat this route's ${count(b?.headers)}`
  }
  if (count(a?.query) !== count(b?.query)) {
    return `${prefix} its ${count(a?.query)} query conditions beat this route's ${count(b?.query)}`
  }
  const valued = (when: When.When | undefined) =>
    [...(when?.headers ?? []), ...(when?.query ?? [])].filter((c) => c.value !== undefined).length
  if (valued(a) !== valued(b)) {
    return `${prefix} its ${valued(a)} conditions with a value beat this route's ${valued(b)}`
  }
  return `${prefix} its conditions ${winner.whenKey} come before this route's ${leaf.whenKey} in byte order`
}

// The nodes from the root's child down to where the route's pattern ends: one per segment.
const branchOf = (leaf: Leaf<any>): Array<Node<any>> => {
  const nodes: Array<Node<any>> = []
  for (let node: Node<any> = leaf.node; node.parent !== undefined; node = node.parent) nodes.push(node)
  return nodes.reverse()
}

const kindOf = (node: Node<any>): string =>
  node.texts !== undefined
    ? "mixed segment"
    : node.key === PARAM_KEY
    ? "parameter"
    : node.key === WILDCARD_KEY
    ? "wildcard"
    : "static segment"

// Why `leaf` loses to `winner`, of the same method, both matching the path: at the first segment where their patterns
// differ (where their branches part), the rule of precedence that puts the winner first.
const outranked = (leaf: Leaf<any>, winner: Leaf<any>): string => {
  const mine = branchOf(leaf)
  const theirs = branchOf(winner)
  let depth = 0
  while (mine[depth] === theirs[depth]) depth++
  const a = theirs[depth]!
  const b = mine[depth]!
  const segment = depth + 1
  const textA = JSON.stringify(winner.route.path.split("/")[segment])
  const textB = JSON.stringify(leaf.route.path.split("/")[segment])
  const prefix = `${name(winner.route)} serves: at segment ${segment}`
  if (kindOf(a) !== kindOf(b)) {
    return `${prefix}, its ${kindOf(a)} ${textA} beats this route's ${kindOf(b)} ${textB} ` +
      "(static beats mixed beats parameter beats wildcard)"
  }
  const more = staticLength(a)
  const fewer = staticLength(b)
  return more !== fewer
    ? `${prefix}, its mixed segment ${textA} has more static characters (${more}) than this route's ${textB} (${fewer})`
    : `${prefix}, its mixed segment ${textA} has as many static characters (${more}) as this route's ${textB}, ` +
      `and its shape ${JSON.stringify(a.key)} comes before ${JSON.stringify(b.key)} in byte order`
}

const otherMethod = (route: Route.Route, method: string): string =>
  method === "HEAD"
    ? `another method: ${route.method}, where a HEAD request is served by a HEAD route, else by a GET route`
    : `another method: ${route.method}, not ${method}`

// Why `leaf` does not serve the request, `winner` being the route that does, when one does; with the condition the
// request fails when the route's conditions alone kept it from serving.
const reasonOf = <R extends Route.Route>(
  leaf: Leaf<R>,
  method: string,
  resolution: Resolution<R>,
  winner: Leaf<R> | undefined,
  facts: When.Facts
): { readonly reason: string; readonly condition?: string } => {
  let serving = leaf.node.leaves!.get(leaf.route.method)
  while (serving !== undefined && serving.whenKey !== leaf.whenKey) serving = serving.next
  if (serving !== leaf) {
    return {
      reason: `${name(serving!.route)} (${serving!.route.id}) has the same method, shape and conditions and was ` +
        "stored after this route: it serves in its place"
    }
  }
  const served = leaf.route.method === method || (method === "HEAD" && leaf.route.method === "GET")
  if (resolution._tag === "BadPath") {
    return { reason: served ? `the path is malformed: ${resolution.reason}` : otherMethod(leaf.route, method) }
  }
  const failed = leaf.when === undefined ? undefined : When.failed(leaf.when, facts)
  if (served && failed !== undefined) {
    return { reason: `its condition ${failed.path} does not hold: ${failed.message}`, condition: failed.path }
  }
  if (winner === undefined) return { reason: otherMethod(leaf.route, method) }
  if (leaf.route.method === winner.route.method) {
    return { reason: leaf.node === winner.node ? outrankedByConditions(leaf, winner) : outranked(leaf, winner) }
  }
  if (method === "HEAD" && leaf.route.method === "GET") {
    return {
      reason: `a GET route serves a HEAD request only when no HEAD route matches the path, and ${
        name(winner.route)
      } does`
    }
  }
  return { reason: otherMethod(leaf.route, method) }
}

/**
 * Explains how `tree` resolves a request (`method`, request target): `lookup`'s resolution, the methods served on
 * the path, and every other route matching the path with why it does not serve. Costs one walk of the nodes that
 * match the path (at most the table), so it is for questions, never for routing.
 */
export const explain = <R extends Route.Route>(
  tree: Tree<R>,
  method: string,
  target: string,
  headers?: When.HeaderSource
): Explanation<R> => {
  const resolution = lookup(tree, method, target, headers)
  const raw = RequestPath.pathOf(target)
  const path = raw === undefined ? undefined : RequestPath.normalise(raw)
  if (typeof path !== "string") return { resolution, allow: [], candidates: [] }
  const leaves = matching(tree, path)
  const winner = resolution._tag === "Found" ? tree.byId.get(resolution.route.id) : undefined
  const facts = new When.Facts(headers, target)
  return {
    resolution,
    allow: resolution._tag === "BadPath" ? [] : allowOf(leaves, facts),
    candidates: leaves.filter((leaf) => leaf !== winner).map((leaf) => ({
      route: leaf.route,
      ...reasonOf(leaf, method, resolution, winner, facts)
    }))
  }
}
