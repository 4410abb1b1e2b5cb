/**
 * Looking a request up in the route tree: depth first in order of precedence, skipping every node of a class that
 * already failed in this lookup (see routeTree.ts).
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import * as When from "../route/when.js"
import {
  type BadPath,
  byteOrder,
  type Found,
  type Leaf,
  type MethodNotAllowed,
  type Node,
  type NotFound,
  notFound,
  type Resolution,
  type Tree
} from "./node.js"
import * as RequestPath from "./requestPath.js"

// ---------------------------------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------------------------------

/**
 * The scratch of one lookup, its own (as find-my-way's and Hono's are): the bounds of the segments the parameters of
 * the branch being tried matched, as pairs, and the nodes reached that hold routes of other methods. Lookups share
 * only the tree, whose classes a failure marks with the lookup's number.
 */
class Walk {
  readonly spans: Array<number> = []
  readonly reached: Array<Node<any>> = []
  /** Whether some node failed in this lookup yet. */
  backtracked = false
  /** Where the last empty segment of the path starts (`-1` for none), found on first use (`-2` until then). */
  lastEmpty = -2
  /** For a HEAD request to a table with HEAD routes: the first GET route reached, with its parameters' spans. */
  fallback: Leaf<any> | undefined = undefined
  /** Made when the fallback is found (a HEAD request to a table with HEAD routes, served by a GET route). */
  fallbackSpans: Array<number> | undefined = undefined
  /** Nodes examined, added to the tree's count when the lookup ends. */
  examined = 0
  /** The request as conditions read it, made when the lookup first reaches a route with conditions. */
  facts: When.Facts | undefined = undefined
  constructor(
    readonly number: number,
    readonly wantsFallback: boolean,
    readonly target: string,
    readonly headers: When.HeaderSource | undefined
  ) {}
}

// The first route of the chain from `leaf` whose conditions the request meets (a route without any meets them).
const firstMet = <R extends Route.Route>(walk: Walk, leaf: Leaf<R> | undefined): Leaf<R> | undefined => {
  while (leaf !== undefined && leaf.when !== undefined) {
    if (When.meets(leaf.when, walk.facts ??= new When.Facts(walk.headers, walk.target))) return leaf
    leaf = leaf.next
  }
  return leaf
}

/** How many nodes lookups in `tree` have examined: the difference around a lookup is its work. */
export const examinedNodes = (tree: Tree<any>): number => tree.examined

// The end of the path is reached at `node`: its route of `method`, or none, noting that the path has routes there.
const atEnd = <R extends Route.Route>(walk: Walk, node: Node<R>, method: string): Leaf<R> | undefined => {
  walk.examined++
  const leaves = node.leaves
  if (leaves === undefined) return undefined
  let leaf = leaves.get(method)
  // Conditions are read only where a route has some: a table without them pays this one test.
  if (leaf !== undefined && leaf.when !== undefined) leaf = firstMet(walk, leaf)
  if (leaf === undefined) {
    walk.reached.push(node)
    if (walk.wantsFallback && walk.fallback === undefined) {
      keepFallback(walk, node.conditional === 0 ? leaves.get("GET") : firstMet(walk, leaves.get("GET")))
    }
  }
  return leaf
}

const keepFallback = (walk: Walk, leaf: Leaf<any> | undefined): void => {
  if (leaf === undefined) return
  walk.fallback = leaf
  walk.fallbackSpans = walk.spans.slice(0, 2 * leaf.names.length)
}

/**
 * The most specific route of `method` below `node` for the segments of `path` from `start` on, `k` parameters in.
 * A node whose class failed already in this lookup is skipped: its subtree would fail alike, and would note the
 * same methods for a 405 as the one that failed first (the class holds the methods at every node below). Only a
 * failure marks a class, so a lookup that does not backtrack writes nothing.
 */
const search = <R extends Route.Route>(
  walk: Walk,
  node: Node<R>,
  path: string,
  start: number,
  method: string,
  k: number
): Leaf<R> | undefined => {
  walk.examined++
  // Until something failed in this lookup, nothing can be skipped: a hit without backtracking reads no class.
  if (walk.backtracked && node.class!.failed === walk.number) return undefined
  let end = path.indexOf("/", start)
  if (end === -1) end = path.length
  // An empty segment matches nothing: a static segment is never empty, nor is a parameter's value.
  if (end !== start) {
    const last = end === path.length
    const only = node.only
    const child = only !== undefined
      ? (only.key!.length === end - start && path.startsWith(only.key!, start) ? only : undefined)
      : node.statics?.get(path.slice(start, end))
    if (child !== undefined) {
      const leaf = last ? atEnd(walk, child, method) : search(walk, child, path, end + 1, method, k)
      if (leaf !== undefined) return leaf
    }
    const mixed = node.mixed
    if (mixed !== undefined) {
      for (let i = 0; i < mixed.length; i++) {
        const child = mixed[i]!
        const texts = child.texts!
        if (!split(walk.spans, texts, path, start, end, k)) continue
        const leaf = last
          ? atEnd(walk, child, method)
          : search(walk, child, path, end + 1, method, k + texts.length - 1)
        if (leaf !== undefined) return leaf
      }
    }
    const param = node.param
    if (param !== undefined) {
      walk.spans[2 * k] = start
      walk.spans[2 * k + 1] = end
      const leaf = last ? atEnd(walk, param, method) : search(walk, param, path, end + 1, method, k + 1)
      if (leaf !== undefined) return leaf
    }
    const wildcard = node.wildcard
    if (wildcard !== undefined && noEmptySegmentFrom(walk, path, start)) {
      walk.spans[2 * k] = start
      walk.spans[2 * k + 1] = path.length
      const leaf = atEnd(walk, wildcard, method)
      if (leaf !== undefined) return leaf
    }
  }
  node.class!.failed = walk.number
  walk.backtracked = true
  return undefined
}

/**
 * Whether the segment `path[start, end)` splits as a mixed segment with static `texts` around its parameters, whose
 * spans it then writes from the `k`-th on. Each parameter but the last takes the shortest non-empty text up to the
 * next occurrence of the static text after it, the last what remains before the final static text. Taking the first
 * occurrence is never wrong: were the rest to match from a later one, it would match from this one too (its first
 * parameter would only be longer), so a segment that fails from the first fails from every one, and one pass decides.
 * Static text holds no `/`, so no occurrence found from inside the segment runs past its end.
 */
export const split = (
  spans: Array<number>,
  texts: ReadonlyArray<string>,
  path: string,
  start: number,
  end: number,
  k: number
): boolean => {
  let at = start + texts[0]!.length
  if (!path.startsWith(texts[0]!, start)) return false
  const params = texts.length - 1
  for (let i = 1; i < params; i++) {
    const text = texts[i]!
    const next = path.indexOf(text, at + 1)
    if (next === -1 || next + text.length > end) return false
    spans[2 * (k + i - 1)] = at
    spans[2 * (k + i - 1) + 1] = next
    at = next + text.length
  }
  const text = texts[params]!
  const valueEnd = end - text.length
  if (valueEnd <= at || !path.startsWith(text, valueEnd)) return false
  spans[2 * (k + params - 1)] = at
  spans[2 * (k + params - 1) + 1] = valueEnd
  return true
}

// Whether every segment of `path` from `start` on, the one at `start` being non-empty, is non-empty.
const noEmptySegmentFrom = (walk: Walk, path: string, start: number): boolean => {
  if (walk.lastEmpty === -2) {
    const lastEmpty = path.charCodeAt(path.length - 1) === 47 ? path.length : path.lastIndexOf("//") + 1
    walk.lastEmpty = lastEmpty === 0 ? -1 : lastEmpty
  }
  return walk.lastEmpty < start
}

const find = <R extends Route.Route>(walk: Walk, tree: Tree<R>, path: string, method: string): Leaf<R> | undefined => {
  const leaf = path.length === 1 ? atEnd(walk, tree.root, method) : search(walk, tree.root, path, 1, method, 0)
  tree.examined += walk.examined
  return leaf
}

// The methods of routes at `nodes` whose conditions the request meets, sorted, with HEAD wherever GET is.
const allowOf = (walk: Walk, nodes: ReadonlyArray<Node<any>>): ReadonlyArray<string> => {
  const methods = new Set<string>()
  for (const node of nodes) {
    for (const [method, leaf] of node.leaves!) if (firstMet(walk, leaf) !== undefined) methods.add(method)
  }
  if (methods.has("GET")) methods.add("HEAD")
  return Array.from(methods).sort(byteOrder)
}

const methodNotAllowed = (walk: Walk): MethodNotAllowed | NotFound => {
  const reached = walk.reached
  if (reached.length === 0) return notFound
  let allow: ReadonlyArray<string>
  const node = reached[0]!
  // A node's methods are kept only when they do not depend on the request: none of its routes has conditions.
  if (reached.length === 1 && node.conditional === 0) allow = node.allow ??= Object.freeze(allowOf(walk, reached))
  else allow = allowOf(walk, reached)
  // Routes whose conditions the request fails count for nothing: with none left, the path has no route for it.
  return allow.length === 0 ? notFound : { _tag: "MethodNotAllowed", allow }
}

const found = <R extends Route.Route>(
  leaf: Leaf<R>,
  path: string,
  spans: ReadonlyArray<number>
): Found<R> | BadPath => {
  const names = leaf.names
  const params: Record<string, string> = {}
  for (let i = 0; i < names.length; i++) {
    const value = RequestPath.decodeSegment(path, spans[2 * i]!, spans[2 * i + 1]!)
    if (value === undefined) return { _tag: "BadPath", reason: RequestPath.notUtf8(segmentNumber(path, spans[2 * i]!)) }
    // A parameter may be named "__proto__": defined, not assigned, so it stays a value and not a prototype.
    if (names[i] === "__proto__") {
      Object.defineProperty(params, "__proto__", { value, enumerable: true, writable: true, configurable: true })
    } else {
      params[names[i]!] = value
    }
  }
  return { _tag: "Found", route: leaf.route, params }
}

const segmentNumber = (path: string, start: number): number => {
  let n = 0
  for (let i = 0; i < start; i++) if (path.charCodeAt(i) === 47) n++
  return n
}

// A HEAD request: its HEAD route, else the GET route that the same walk reached first.
const findHead = <R extends Route.Route>(
  tree: Tree<R>,
  path: string,
  target: string,
  headers: When.HeaderSource | undefined
): Resolution<R> => {
  const walk = new Walk(++tree.lookups, true, target, headers)
  const leaf = find(walk, tree, path, "HEAD")
  if (leaf !== undefined) return found(leaf, path, walk.spans)
  const get: Leaf<R> | undefined = walk.fallback
  return get === undefined ? methodNotAllowed(walk) : found(get, path, walk.fallbackSpans!)
}

/**
 * Resolves a request: the route that serves it with its parameters, the methods that would be served, nothing, or
 * a malformed path. `headers` are read only when a route reached has conditions (without them, a route with a host or
 * header condition never serves).
 */
export const lookup = <R extends Route.Route>(
  tree: Tree<R>,
  method: string,
  target: string,
  headers?: When.HeaderSource
): Resolution<R> => {
  const raw = RequestPath.pathOf(target)
  if (raw === undefined) return notFound
  const path = RequestPath.normalise(raw)
  if (typeof path === "number") return { _tag: "BadPath", reason: RequestPath.badEscape(path) }
  if (method === "HEAD" && tree.headRoutes > 0) return findHead(tree, path, target, headers)
  // Without HEAD routes, a HEAD request is served by the GET route, without a body.
  const walk = new Walk(++tree.lookups, false, target, headers)
  const leaf = find(walk, tree, path, method === "HEAD" ? "GET" : method)
  return leaf === undefined ? methodNotAllowed(walk) : found(leaf, path, walk.spans)
}
